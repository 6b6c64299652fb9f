-- The receipt events of every msgId matched in this run (new events, and
-- earlier ones that were waiting uncorrelated), with the message row they
-- belong to. Creates the temporary table reconcile_events.
CREATE TEMPORARY TABLE reconcile_events ON COMMIT DROP AS
SELECT d.message_id, d.message_created_at, d.msg_id, d.pass,
       r.receipt_id, r.submit_month, r.status_word, r.outcome, r.cause, r.provider_txn_id,
       r.provider_submit_at, r.provider_done_at, r.first_seen_at
  FROM reconcile_decisions d
  JOIN dlr.delivery_receipts r ON r.provider_message_id = d.msg_id AND r.message_id IS NULL
 WHERE d.matched
