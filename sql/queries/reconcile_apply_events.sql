-- The receipt events of every msgId matched in this run, with the message
-- row they belong to: stored events that were waiting uncorrelated
-- (stored = true) and the day's new events (stored = false).
-- Creates the work table reconcile_work.reconcile_events.
CREATE UNLOGGED TABLE reconcile_work.reconcile_events AS
SELECT d.message_id, d.message_created_at, d.msg_id, d.pass, d.same_text,
       r.receipt_id, r.submit_month, r.status_word, r.outcome, r.cause, r.provider_txn_id,
       r.provider_submit_at, r.provider_done_at, r.first_seen_at, true AS stored
  FROM reconcile_work.reconcile_decisions d
  JOIN dlr.delivery_receipts r ON r.provider_message_id = d.msg_id AND r.message_id IS NULL
 WHERE d.matched
UNION ALL
SELECT d.message_id, d.message_created_at, d.msg_id, d.pass, d.same_text,
       n.receipt_id, n.submit_month, n.status_word, n.outcome, n.cause, n.txn_id,
       n.provider_submit_at, n.provider_done_at, n.first_seen_at, false
  FROM reconcile_work.reconcile_decisions d
  JOIN reconcile_work.reconcile_new_events n ON n.msg_id = d.msg_id
 WHERE d.matched
