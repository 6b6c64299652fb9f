-- The transaction ids the day's staged provider rows carry (reconcile_work.reconcile_source_rows, made by
-- reconcile_receipts_normalise.sql, already cleaned): evidence that the provider sent those transactions,
-- which lets reconciliation promote their `scheduled` rows before it correlates the day.
SELECT DISTINCT txn_id
  FROM reconcile_work.reconcile_source_rows
 WHERE txn_id IS NOT NULL
