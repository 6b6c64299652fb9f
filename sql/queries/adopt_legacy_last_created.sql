-- LEGACY DATABASE (adopt cutover). When the newest legacy row was created.
-- Identifiers: table, created_at (its column).
-- Parameters: none.
SELECT max({created_at})::timestamptz FROM {table}
