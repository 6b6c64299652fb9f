-- Figures of one loaded day report, for the materialisation metadata:
-- rows, rows repeating an earlier (msgId, status) pair (the provider's
-- duplicated rows), and times present in the file that did not parse.
-- Grouped (a hash aggregate) rather than count(DISTINCT ...), which sorts.
-- Read from the day's partition by name: through dlr.day_report_rows the
-- planner estimates the number of groups from the partitioned parent's own
-- statistics, which autovacuum never collects and the load does not (it
-- analyzes the partition). Without them it assumes 200 distinct values a
-- column, and took a day's million pairs for 200 x 200 = 40,000
-- (docs/design.md "Day report load").
-- Identifiers: partition (from ingest_day_report_partition).
-- Parameters: none.
SELECT COALESCE(sum(rows), 0)::bigint           AS rows,
       COALESCE(sum(rows - 1), 0)::bigint       AS duplicates,
       COALESCE(sum(unparsed_times), 0)::bigint AS unparsed_times
  FROM (SELECT count(*) AS rows,
               count(*) FILTER (WHERE submit_time_local <> '' AND provider_submit_at IS NULL)
             + count(*) FILTER (WHERE delivery_time_local <> '' AND provider_done_at IS NULL) AS unparsed_times
          FROM {partition}
         GROUP BY msg_id, status) AS per_event
