-- Raw report loads the hourly upkeep drops (report dates before
-- raw_reports_before: dlr.drop_day_report_partitions_before,
-- dlr.purge_txn_reports_before, dlr.purge_getdlr_rows_before); read-only.
-- Parameters: raw_reports_before (date). Returns one row of counts.
SELECT (SELECT count(*)
          FROM pg_inherits i
          JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'dlr.day_report_rows'::regclass
           AND c.relname ~ '^day_report_rows_[0-9]+$' AND length(c.relname) = length('day_report_rows_YYYYMMDD')
           AND to_date(right(c.relname, 8), 'YYYYMMDD') < %(raw_reports_before)s::date) AS day_report_partitions,
       (SELECT count(*) FROM dlr.txn_report_fetches
         WHERE report_date < %(raw_reports_before)s::date) AS txn_reports,
       (SELECT count(*) FROM dlr.getdlr_rows WHERE report_date < %(raw_reports_before)s::date) AS getdlr_rows
