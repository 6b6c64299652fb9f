-- The columns of one table as the database has them, in their order, for the
-- asset's dagster/column_schema: name, type, whether NULL is allowed.
-- Parameters: table_schema, table_name.
SELECT column_name, data_type, is_nullable = 'YES'
  FROM information_schema.columns
 WHERE table_schema = %(table_schema)s AND table_name = %(table_name)s
 ORDER BY ordinal_position
