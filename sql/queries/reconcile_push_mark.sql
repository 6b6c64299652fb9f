-- The pass's pushes whose receipt event is now stored (new, or already
-- there from another source or an earlier push) get their reconciled time,
-- once; held ones stay waiting. The time is the database's clock, the
-- clock of received_at, so the lag is push-to-reconciled however the
-- application's clock runs. Returns one row: pushes marked, and the p50 /
-- p95 of their lag in seconds (NULL when none).
-- Parameters: none.
WITH marked AS (
    UPDATE dlr.receipt_push_inbox p
       SET reconciled_at = clock_timestamp()
      FROM reconcile_work.reconcile_source_rows s
     WHERE s.source = 'push'
       AND p.provider_message_id = s.msg_id
       AND p.error_code = s.error_code
       AND p.reconciled_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM reconcile_work.reconcile_push_held h WHERE h.msg_id = s.msg_id)
    RETURNING EXTRACT(EPOCH FROM p.reconciled_at - p.received_at)::float8 AS lag_s
)
SELECT count(*) AS marked,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY lag_s) AS lag_p50_s,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY lag_s) AS lag_p95_s
  FROM marked
