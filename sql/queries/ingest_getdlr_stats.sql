-- Figures of one day's stored intraday pull, for the materialisation
-- metadata: rows, and rows repeating an earlier (msgId, status) pair (pages
-- that shifted while being read). Grouped: a hash aggregate, no sort.
-- Parameters: report_date.
SELECT COALESCE(sum(rows), 0)::bigint     AS rows,
       COALESCE(sum(rows - 1), 0)::bigint AS duplicates
  FROM (SELECT count(*) AS rows
          FROM dlr.getdlr_rows
         WHERE report_date = %(report_date)s
         GROUP BY msg_id, status) AS per_event
