-- Fresh statistics for one table, e.g. a work or temporary table just
-- filled: autovacuum never sees them before they are gone, and the plan of the next join
-- depends on their size.
-- Identifiers: table.
-- Parameters: none.
ANALYZE {table}
