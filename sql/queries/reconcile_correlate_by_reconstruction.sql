-- Pass 3: reconstruction, for msgIds no earlier pass found any candidate
-- for, against rows without a transaction id (OTP; rows that went
-- `unknown` before their response was stored): same recipient, same
-- sender (for an event that knows no sender, a push whose day report row has
-- not been read, instead the row's OTP createTime within 1 s of the
-- provider's submit time: an OTP push is matched within a minute, not the
-- next day, and two OTPs to one number in one second stay ambiguous),
-- attempt time (msg.attempt_at, V80: submitted_at, else claimed_at,
-- or scheduled_for for a row handed to the provider ahead of its time, which
-- the provider sends then) within the window around the provider's submit time (or its other reading inside a DST
-- fall-back hour), both ends included (the expressions of
-- outbound_message_correlate_idx).
-- A handed-over row (scheduled_for > claimed_at: a provider-side campaign's)
-- is sent from its time on but possibly much later (a throttled provider
-- works through a large campaign for hours): its line may lie from window
-- before to spread after its time, i.e. its time from spread before to
-- window after the submit time. That wider range is a separate OR arm
-- limited to handed-over rows, so every arm is still a range on the index
-- and an ordinary row is still looked for only within +/- window. Several
-- lines in one row's spread make it ambiguous like any other row with two
-- msgIds (docs/design.md#provider-side-campaigns).
-- Two pieces of evidence then only choose among one receipt's candidates,
-- never empty its list: the text's keyed fingerprint (same_text) and, where
-- the row holds the OTP answer's createTime, whether the provider's submit
-- time (either reading) is within 1 s of it (same_second); NULL where a
-- side does not know. A candidate is dropped only when another candidate of
-- the same receipt agrees where it contradicts, and contradicts nowhere it
-- agrees. A lone candidate always stays: the provider may alter the text
-- (a signature, line breaks, GSM-7 substitutions) or the key may have
-- changed, and a dropped lone candidate would be proved never submitted and
-- sent twice. Every candidate left is kept: one msgId with two rows, or one
-- row with two msgIds, is ambiguous for all of them (two identical texts
-- to one number stay so).
-- Each pair keeps same_text: the match's evidence (reconcile_apply_decide.sql).
-- Parameters: window, spread (intervals).
-- Creates the work table reconcile_work.reconcile_pairs_by_reconstruction.
CREATE UNLOGGED TABLE reconcile_work.reconcile_pairs_by_reconstruction AS
WITH candidates AS (
    SELECT u.msg_id, m.id AS message_id, m.created_at AS message_created_at,
           m.message_fingerprint = u.fingerprint AS same_text, s.same_second
      FROM reconcile_work.reconcile_uncorrelated u
      JOIN msg.outbound_message m
        ON m.recipient = u.recipient
      CROSS JOIN LATERAL (
           SELECT CASE WHEN m.provider_created_at IS NOT NULL
                       THEN COALESCE(abs(EXTRACT(EPOCH FROM u.submit_at - m.provider_created_at)) <= 1, false)
                         OR COALESCE(abs(EXTRACT(EPOCH FROM u.alt_submit_at - m.provider_created_at)) <= 1, false)
                  END AS same_second) AS s
     WHERE (m.sender_id = u.sender_name OR u.sender_name IS NULL AND s.same_second)
       AND (msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for)
                BETWEEN u.submit_at - %(window)s::interval AND u.submit_at + %(window)s::interval
            OR msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for)
                BETWEEN u.alt_submit_at - %(window)s::interval AND u.alt_submit_at + %(window)s::interval
            OR msg.handed_over(m.claimed_at, m.scheduled_for)
               AND msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for)
                   BETWEEN u.submit_at - %(spread)s::interval AND u.submit_at + %(window)s::interval
            OR msg.handed_over(m.claimed_at, m.scheduled_for)
               AND msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for)
                   BETWEEN u.alt_submit_at - %(spread)s::interval AND u.alt_submit_at + %(window)s::interval)
       AND m.provider_txn_id IS NULL
       AND m.queue_state IN ('submitted', 'unknown')  -- = state; the partial indexes read queue_state (V73)
       AND m.provider_message_id IS NULL
       AND NOT EXISTS (SELECT 1 FROM reconcile_work.reconcile_pairs_by_msgid p WHERE p.msg_id = u.msg_id)
       AND NOT EXISTS (SELECT 1 FROM reconcile_work.reconcile_pairs_by_transaction p WHERE p.msg_id = u.msg_id)
)
SELECT c.msg_id, c.message_id, c.message_created_at, 3::smallint AS pass, c.same_text
  FROM candidates c
 WHERE NOT EXISTS (
       SELECT 1
         FROM candidates o
        WHERE o.msg_id = c.msg_id
          AND ((o.same_text AND c.same_text IS FALSE) OR (o.same_second AND c.same_second IS FALSE))
          AND ((c.same_text AND o.same_text IS FALSE) OR (c.same_second AND o.same_second IS FALSE)) IS NOT TRUE)
