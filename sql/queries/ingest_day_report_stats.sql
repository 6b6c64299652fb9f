-- Figures of one loaded day report, for the materialisation metadata:
-- rows, rows repeating an earlier (msgId, status) pair (the provider's
-- duplicated rows), and times present in the file that did not parse.
-- Parameters: report_date.
SELECT count(*) AS rows,
       count(*) - count(DISTINCT (msg_id, status)) AS duplicates,
       count(*) FILTER (WHERE submit_time_local <> '' AND provider_submit_at IS NULL)
     + count(*) FILTER (WHERE delivery_time_local <> '' AND provider_done_at IS NULL) AS unparsed_times
  FROM dlr.day_report_rows
 WHERE report_date = %(report_date)s
