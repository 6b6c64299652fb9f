-- The provider days that have receipt pushes waiting for reconciliation
-- (the inbox's partial index of unreconciled rows), in order.
-- Parameters: none. Returns (report_date).
SELECT DISTINCT report_date
  FROM dlr.receipt_push_inbox
 WHERE reconciled_at IS NULL
 ORDER BY report_date
