-- Claim the next due batch of one channel and message class, oldest due
-- first (access pattern 1: outbound_message_claim_idx). Due time is
-- scheduled_for when set, else created_at; a row whose expires_at has passed
-- is left for the expiry sweep, never sent late. SKIP LOCKED lets several
-- workers drain one queue; one class per call keeps the index order usable
-- (claim OTP first by calling it for 'otp' before the others).
-- Parameters: channel, message_class, now (application clock), limit.
-- Returns the claimed rows, oldest due first (an UPDATE returns its rows in
-- partition order): exactly the columns of
-- sms_pipeline.send.claim.ClaimedMessage, in its field order (checked there).
WITH due AS (
    SELECT id, created_at
      FROM msg.outbound_message
     WHERE state = 'pending'
       AND channel = %(channel)s::msg.message_channel
       AND message_class = %(message_class)s
       AND COALESCE(scheduled_for, created_at) <= %(now)s::timestamptz
       AND (expires_at IS NULL OR expires_at > %(now)s::timestamptz)
     ORDER BY COALESCE(scheduled_for, created_at)
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE msg.outbound_message m
       SET state = 'claimed',
           claimed_at = %(now)s::timestamptz,
           attempt_count = m.attempt_count + 1,
           updated_at = %(now)s::timestamptz
     -- ids are unique across partitions (one identity); the created_at list only
     -- prunes partitions. Arrays rather than a join: a join lets the planner hash
     -- the whole pending queue to update a batch of it.
     WHERE m.id = ANY (ARRAY(SELECT id FROM due))
       AND m.created_at = ANY (ARRAY(SELECT created_at FROM due))
    RETURNING m.id, m.created_at, m.attempt_key, m.tenant_id, m.channel, m.message_class, m.recipient,
              m.sender_id, m.body, m.encoding, m.segments, m.template_id, m.dlt_entity_id, m.dlt_template_id,
              m.scheduled_for, m.expires_at, m.claimed_at, m.attempt_count
)
SELECT * FROM claimed ORDER BY COALESCE(scheduled_for, created_at), id
