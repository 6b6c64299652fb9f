-- A temporary table holding a day report's CSV as it is: one text column
-- per header column, named after the field it maps to (ignored_<n> for a
-- column the map does not know), and line_no numbering the data rows in
-- input order (COPY fills the identity row by row). Dropped with the load's
-- transaction, or with its savepoint when the CSV is staged again leniently.
-- Identifiers: columns (each "name text", in header order).
-- Parameters: none.
CREATE TEMPORARY TABLE day_report_staging (
    line_no integer GENERATED ALWAYS AS IDENTITY,
    {columns}
) ON COMMIT DROP
