-- The first step of a claim: lock the next due rows of one channel and message
-- class, oldest due first (access pattern 1: outbound_message_claim_idx), so
-- the worker can plan its next request from them; claim_take.sql then claims
-- only that request's rows in the same transaction, and the lock on the others
-- ends with it (a claim takes only what the worker sends next). Due time is
-- scheduled_for when set, else created_at; a row whose expires_at has passed
-- is left for the expiry sweep, never sent late. SKIP LOCKED lets several
-- workers drain one queue; one class per call keeps the index order usable
-- (claim OTP first by calling it for 'otp' before the others).
-- Parameters: channel, message_class, now (application clock), limit.
-- Returns the rows as claim_take.sql will leave them (claimed_at = now,
-- attempt_count + 1), oldest due first: exactly the columns of
-- sms_pipeline.send.claim.ClaimedMessage, in its field order (checked there).
SELECT id, created_at, attempt_key, tenant_id, channel, message_class, recipient,
       sender_id, body, encoding, segments, template_id, dlt_entity_id, dlt_template_id,
       scheduled_for, expires_at, %(now)s::timestamptz AS claimed_at, attempt_count + 1 AS attempt_count,
       campaign_id
  FROM msg.outbound_message
 WHERE queue_state = 'pending'  -- = state; the partial indexes read queue_state (V73)
   AND channel = %(channel)s::msg.message_channel
   AND message_class = %(message_class)s
   AND COALESCE(scheduled_for, created_at) <= %(now)s::timestamptz
   AND (expires_at IS NULL OR expires_at > %(now)s::timestamptz)
 ORDER BY COALESCE(scheduled_for, created_at)
 LIMIT %(limit)s
   FOR UPDATE SKIP LOCKED
