-- Copy a day report's rows into its report date's partition of
-- dlr.day_report_rows, in the column order the ingest writes them.
-- Identifiers: partition (from ingest_day_report_partition), columns (the column list).
-- Parameters: none.
COPY {partition} ({columns}) FROM STDIN
