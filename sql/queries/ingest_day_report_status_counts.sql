-- Rows per raw status word of one loaded day report; Python folds them
-- into canonical words (core.statuses) to count unmapped ones.
-- Parameters: report_date.
SELECT status, count(*) AS rows
  FROM dlr.day_report_rows
 WHERE report_date = %(report_date)s
 GROUP BY status
