-- The day report's CSV member into day_report_staging, its own bytes:
-- Postgres parses the CSV (quotes, CRLF or LF line ends), HEADER skips the
-- header line (a BOM with it) and ENCODING refuses bytes that are not UTF-8.
-- An unquoted empty value arrives as NULL (the INSERT reads it as '').
-- Identifiers: columns (the staging columns, in header order).
-- Parameters: none.
COPY day_report_staging ({columns}) FROM STDIN (FORMAT csv, HEADER true, ENCODING 'UTF8')
