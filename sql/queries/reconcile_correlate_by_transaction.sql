-- Pass 2: by transaction + recipient, for msgIds pass 1 did not place,
-- against rows that have the transaction id but no msgId yet and may have
-- reached the provider. The same recipient twice in one transaction gives
-- two candidates: decided later as ambiguous, never picked.
-- Creates the work table reconcile_work.reconcile_pairs_by_transaction.
CREATE UNLOGGED TABLE reconcile_work.reconcile_pairs_by_transaction AS
SELECT u.msg_id, m.id AS message_id, m.created_at AS message_created_at, 2::smallint AS pass
  FROM reconcile_work.reconcile_uncorrelated u
  JOIN msg.outbound_message m
    ON m.provider_txn_id = u.txn_id
   AND m.recipient = u.recipient
 WHERE u.txn_id IS NOT NULL
   AND m.provider_message_id IS NULL
   AND m.queue_state IN ('submitted', 'unknown')  -- = state; the transaction index reads queue_state
   AND NOT EXISTS (SELECT 1 FROM reconcile_work.reconcile_pairs_by_msgid p WHERE p.msg_id = u.msg_id)
