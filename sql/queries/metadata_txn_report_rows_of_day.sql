-- Rows of dlr.txn_report_rows stored for one provider day (the answers kept
-- for the day's transactions), for the asset's dagster/row_count.
-- Parameters: report_date.
SELECT count(*)
  FROM dlr.txn_report_rows
 WHERE report_date = %(report_date)s
