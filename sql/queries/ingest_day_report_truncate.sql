-- Empty one report date's partition of dlr.day_report_rows, in the
-- transaction that copies the new download in (ingest_day_report_copy).
-- Identifiers: partition (from ingest_day_report_partition).
-- Parameters: none.
TRUNCATE {partition}
