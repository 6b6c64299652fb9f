-- Figures of one day's stored intraday pull, for the materialisation
-- metadata: rows, and rows repeating an earlier (msgId, status) pair (pages
-- that shifted while being read).
-- Parameters: report_date.
SELECT count(*) AS rows,
       count(*) - count(DISTINCT (msg_id, status)) AS duplicates
  FROM dlr.getdlr_rows
 WHERE report_date = %(report_date)s
