-- The versioned migrations applied, in version order.
-- Parameters: none.
SELECT version, name, checksum, applied_at FROM public.schema_migrations ORDER BY version
