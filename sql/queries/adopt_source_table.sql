-- Legacy side, read only: the table a typed name resolves to, always as
-- schema.table (raw names, unquoted), so `sends` and `public.sends` are one
-- table for markers, event ids and checkpoints. NULL: no such table.
-- Parameters: table (the typed name as SQL text, each part quoted).
SELECT n.nspname || '.' || c.relname
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.oid = to_regclass(%(table)s)
