-- The repeatable migrations applied (the checksum of the content last
-- applied), by name.
-- Parameters: none.
SELECT name, checksum, applied_at FROM public.schema_repeatables ORDER BY name
