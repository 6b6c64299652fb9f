-- The day's new events stored once, already correlated: a matched event
-- with its message and what it did (reconcile_work.reconcile_event_dispositions), any
-- other with its result (reconcile_work.reconcile_unmatched: ambiguous or not_found).
-- Written after the decisions so that no event is inserted uncorrelated and
-- then rewritten by a link update (two row versions, every index twice).
-- Keeps the receipt ids taken in reconcile_work.reconcile_new_events.
-- In receipt-id order: the ids were taken as the events came out of their
-- byte-wise sort by key (in the plans measured; nothing guarantees it, and
-- only the speed depends on it), so the primary key takes its entries at
-- its right edge and the event key in one sweep, not in the joins' order
-- (bench/RESULTS.md, "Landed: the receipts INSERT in receipt-id order").
-- Parameters: now. Returns how many events were stored.
WITH stored AS (
    INSERT INTO dlr.delivery_receipts (
        receipt_id, provider_message_id, status_word, raw_status, outcome, provider_txn_id, recipient, sender_name,
        cause, error_code, units, provider_submit_at, submit_month, provider_done_at, source, first_seen_at,
        message_id, message_created_at, correlation_result, correlated_at, disposition, message_fingerprint)
    OVERRIDING SYSTEM VALUE
    SELECT n.receipt_id, n.msg_id, n.status_word, n.raw_status, n.outcome, n.txn_id, n.recipient, n.sender_name,
           n.cause, n.error_code, n.units, n.provider_submit_at, n.submit_month, n.provider_done_at, n.source,
           n.first_seen_at,
           x.message_id, x.message_created_at,
           CASE WHEN x.receipt_id IS NOT NULL THEN 'matched'::msg.correlation_result ELSE u.result END,
           %(now)s::timestamptz,
           x.disposition,
           n.message_fingerprint
      FROM reconcile_work.reconcile_new_events n
      LEFT JOIN reconcile_work.reconcile_event_dispositions x ON x.receipt_id = n.receipt_id AND NOT x.stored
      LEFT JOIN reconcile_work.reconcile_unmatched u ON u.msg_id = n.msg_id
     ORDER BY n.receipt_id
    RETURNING 1
)
SELECT count(*) FROM stored
