-- Rows per raw status word of one day's stored intraday pull.
-- Parameters: report_date.
SELECT status, count(*) AS rows
  FROM dlr.getdlr_rows
 WHERE report_date = %(report_date)s
 GROUP BY status
