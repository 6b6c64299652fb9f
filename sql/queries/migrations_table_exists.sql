-- Whether a bookkeeping table of the migration runner exists yet (a
-- database never upgraded has none): true or false.
-- Parameters: relation (its schema-qualified name, e.g.
-- 'public.schema_migrations').
SELECT to_regclass(%(relation)s) IS NOT NULL
