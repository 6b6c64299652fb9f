-- Fresh statistics for one table, e.g. a temporary table just filled:
-- autovacuum never sees temporary tables, and the plan of the next join
-- depends on their size.
-- Identifiers: table.
-- Parameters: none.
ANALYZE {table}
