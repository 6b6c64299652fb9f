-- The first step of a provider-side campaign's claim (docs/design.md#provider-side-campaigns):
-- lock the pending rows of one channel and message class that belong to a
-- provider-side campaign whose time is still ahead, so the worker hands them
-- to the provider now, with their scheduleTime, instead of holding them until
-- due. claim_take.sql then claims only the rows of the next request, as for
-- due rows. Rows whose time has passed are due: the ordinary claim
-- (claim_candidates.sql) sends them at once. A row that would expire before
-- its time is left for the expiry sweep (the provider would send it late),
-- and a cancelled campaign's rows are never handed over. The campaign's own
-- time prunes the campaigns long sent (outbound_message_campaign_idx finds
-- each remaining campaign's pending rows).
-- Parameters: channel, message_class, now (application clock), limit.
-- Returns exactly the columns of sms_pipeline.send.claim.ClaimedMessage, in
-- its field order (checked there), as claim_take.sql will leave them.
SELECT m.id, m.created_at, m.attempt_key, m.tenant_id, m.channel, m.message_class, m.recipient,
       m.sender_id, m.body, m.encoding, m.segments, m.template_id, m.dlt_entity_id, m.dlt_template_id,
       m.scheduled_for, m.expires_at, %(now)s::timestamptz AS claimed_at, m.attempt_count + 1 AS attempt_count,
       m.campaign_id
  FROM msg.campaign c
  JOIN msg.outbound_message m ON m.campaign_id = c.id
 WHERE c.provider_side
   AND c.cancelled_at IS NULL
   AND c.scheduled_for > %(now)s::timestamptz
   AND m.queue_state = 'pending'  -- = state; the indexes read queue_state (V73)
   AND m.channel = %(channel)s::msg.message_channel
   AND m.message_class = %(message_class)s
   AND m.scheduled_for > %(now)s::timestamptz
   AND (m.expires_at IS NULL OR m.expires_at > m.scheduled_for)
 ORDER BY m.scheduled_for, m.campaign_id, m.id
 LIMIT %(limit)s
   FOR UPDATE OF m SKIP LOCKED
