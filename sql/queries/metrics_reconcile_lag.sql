-- How far reconciliation is behind, from what it stores: the receipt pushes
-- still waiting in the inbox (its partial index of unreconciled rows) and
-- how long the oldest has waited (on the database's clock, received_at's
-- own), and the newest provider day whose day report is loaded (the daily
-- run reconciles a day in the run that loads its report).
-- Parameters: none.
-- Returns (pushes_waiting, oldest_push_wait_s, newest_day_report).
SELECT count(*) AS pushes_waiting,
       COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(received_at)), 0)::float8 AS oldest_push_wait_s,
       (SELECT max(report_date) FROM dlr.report_checkpoints
         WHERE report_kind = 'day' AND loaded_at IS NOT NULL) AS newest_day_report
  FROM dlr.receipt_push_inbox
 WHERE reconciled_at IS NULL
