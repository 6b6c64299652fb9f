-- The first step of a provider-side campaign's claim (docs/design.md#provider-side-campaigns):
-- lock the pending rows of one channel and message class that belong to a
-- provider-side campaign whose time is still ahead, so the worker hands them
-- to the provider now, with their scheduleTime, instead of holding them until
-- due. claim_take.sql then claims only the rows of the next request, as for
-- due rows. Rows whose time has passed are due: the ordinary claim
-- (claim_candidates.sql) sends them at once. A row that would expire before
-- its time is left for the expiry sweep (the provider would send it late),
-- and a cancelled campaign's rows are never handed over.
--
-- Campaign by campaign, earliest time first (then id; the campaign's own time
-- prunes the campaigns long sent), each campaign's rows in id order, i.e.
-- request order, straight off outbound_message_campaign_handover_idx (V81):
-- the outer LIMIT stops at the first campaign that fills it, so a claim reads
-- about `limit` rows however large the campaign, never sorts it whole. The
-- lock is taken inside each campaign's scan, before its LIMIT: rows another
-- worker holds (SKIP LOCKED) do not count, so a second worker takes the
-- campaign's next rows, or the next campaign's when another worker holds all
-- that is left of this one, and finds nothing only when nothing is left.
-- Parameters: channel, message_class, now (application clock), limit.
-- Returns exactly the columns of sms_pipeline.send.claim.ClaimedMessage, in
-- its field order (checked there), as claim_take.sql will leave them; the
-- caller orders them (claim.py).
SELECT m.id, m.created_at, m.attempt_key, m.tenant_id, m.channel, m.message_class, m.recipient,
       m.sender_id, m.body, m.encoding, m.segments, m.template_id, m.dlt_entity_id, m.dlt_template_id,
       m.scheduled_for, m.expires_at, %(now)s::timestamptz AS claimed_at, m.attempt_count + 1 AS attempt_count,
       m.campaign_id
  FROM (SELECT id
          FROM msg.campaign
         WHERE provider_side
           AND cancelled_at IS NULL
           AND scheduled_for > %(now)s::timestamptz
         ORDER BY scheduled_for, id) AS c
 CROSS JOIN LATERAL (
       SELECT *
         FROM msg.outbound_message m
        WHERE m.campaign_id = c.id
          AND m.queue_state = 'pending'  -- = state; the indexes read queue_state (V73)
          AND m.channel = %(channel)s::msg.message_channel
          AND m.message_class = %(message_class)s
          AND m.scheduled_for > %(now)s::timestamptz
          AND (m.expires_at IS NULL OR m.expires_at > m.scheduled_for)
        ORDER BY m.id
        LIMIT %(limit)s
          FOR UPDATE SKIP LOCKED) AS m
 LIMIT %(limit)s
