-- Rows per raw status word of one loaded day report; Python folds them
-- into canonical words (core.statuses) to count unmapped ones. From the
-- day's partition, as ingest_day_report_stats.sql.
-- Identifiers: partition (from ingest_day_report_partition).
-- Parameters: none.
SELECT status, count(*) AS rows
  FROM {partition}
 GROUP BY status
