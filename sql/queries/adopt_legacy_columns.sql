-- LEGACY DATABASE (adopt install-trigger). The columns of the legacy table
-- and their types, to check the map before a trigger reads them.
-- Parameters: table (the legacy table's name as SQL text, quoted).
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = to_regclass(%(table)s) AND attnum > 0 AND NOT attisdropped
