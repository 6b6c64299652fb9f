-- Figures of one loaded day report, for the materialisation metadata:
-- rows, rows repeating an earlier (msgId, status) pair (the provider's
-- duplicated rows), and times present in the file that did not parse.
-- Grouped (a hash aggregate) rather than count(DISTINCT ...), which sorts.
-- Parameters: report_date.
SELECT COALESCE(sum(rows), 0)::bigint           AS rows,
       COALESCE(sum(rows - 1), 0)::bigint       AS duplicates,
       COALESCE(sum(unparsed_times), 0)::bigint AS unparsed_times
  FROM (SELECT count(*) AS rows,
               count(*) FILTER (WHERE submit_time_local <> '' AND provider_submit_at IS NULL)
             + count(*) FILTER (WHERE delivery_time_local <> '' AND provider_done_at IS NULL) AS unparsed_times
          FROM dlr.day_report_rows
         WHERE report_date = %(report_date)s
         GROUP BY msg_id, status) AS per_event
