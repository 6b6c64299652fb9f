-- Rows per raw status word of one loaded day report, and how many of them
-- hold a time present in the file that did not parse; Python folds the
-- words into canonical ones (core.statuses) to count unmapped ones, and sums
-- the rows and the unparsed times.
-- Parameters: report_date.
SELECT status,
       count(*) AS rows,
       count(*) FILTER (WHERE submit_time_local <> '' AND provider_submit_at IS NULL)
     + count(*) FILTER (WHERE delivery_time_local <> '' AND provider_done_at IS NULL) AS unparsed_times
  FROM dlr.day_report_rows
 WHERE report_date = %(report_date)s
 GROUP BY status
