-- Pass 3: reconstruction, for msgIds no earlier pass found any candidate
-- for, against rows without a transaction id (OTP; rows that went
-- `unknown` before their response was stored): same recipient, same
-- sender, attempt time (submitted_at, else claimed_at) within the window
-- around the provider's submit time (or its other reading inside a DST
-- fall-back hour), both ends included (the expressions of
-- outbound_message_correlate_idx). Every candidate is kept: one msgId
-- with two rows, or one row with two msgIds, is ambiguous for all of them.
-- Parameters: window (interval).
-- Creates the temporary table reconcile_pairs_by_reconstruction.
CREATE TEMPORARY TABLE reconcile_pairs_by_reconstruction ON COMMIT DROP AS
SELECT u.msg_id, m.id AS message_id, m.created_at AS message_created_at, 3::smallint AS pass
  FROM reconcile_uncorrelated u
  JOIN msg.outbound_message m
    ON m.recipient = u.recipient
   AND m.sender_id = u.sender_name
   AND (COALESCE(m.submitted_at, m.claimed_at) BETWEEN u.submit_at - %(window)s::interval
                                                   AND u.submit_at + %(window)s::interval
        OR COALESCE(m.submitted_at, m.claimed_at) BETWEEN u.alt_submit_at - %(window)s::interval
                                                      AND u.alt_submit_at + %(window)s::interval)
 WHERE m.provider_txn_id IS NULL
   AND m.queue_state IN ('submitted', 'unknown')  -- = state; the partial indexes read queue_state (V73)
   AND m.provider_message_id IS NULL
   AND NOT EXISTS (SELECT 1 FROM reconcile_pairs_by_msgid p WHERE p.msg_id = u.msg_id)
   AND NOT EXISTS (SELECT 1 FROM reconcile_pairs_by_transaction p WHERE p.msg_id = u.msg_id)
