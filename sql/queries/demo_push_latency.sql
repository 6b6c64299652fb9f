-- The demo's receipt pushes: how many the receiver stored, how many a pass
-- reconciled, and the median and p95 seconds from one to the other (both
-- times from the database's clock).
SELECT count(*)::int,
       count(reconciled_at)::int,
       (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM reconciled_at - received_at)))::float8,
       (percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM reconciled_at - received_at)))::float8
  FROM dlr.receipt_push_inbox
