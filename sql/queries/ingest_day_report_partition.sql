-- The partition of dlr.day_report_rows for one report date, created if
-- missing (the caller commits it before the load: creating it inside would
-- hold the parent's partition lock for the whole COPY), as its schema and
-- table name, to be quoted as identifiers by the TRUNCATE, the INSERT and
-- the load's closing figures.
-- Parameters: report_date.
SELECT parse_ident(dlr.ensure_day_report_partition(%(report_date)s)) AS partition
