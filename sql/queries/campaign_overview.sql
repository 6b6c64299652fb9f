-- Campaigns with their rows counted by state (one campaign, or all when id
-- is NULL), in the order they go out. The rows a cancel took (expired,
-- reason cancelled) count under `cancelled`, apart from the other expired
-- rows. Beside them the rows sent (submitted_at set: billed, whatever
-- became of them since) and the first and last time they went: a cancel
-- or reschedule that came too late for part of the campaign must not hide
-- it (docs/design.md#cancel-and-reschedule). Reads
-- outbound_message_campaign_idx (V79).
-- Parameters: id (a campaign's id, or NULL for every campaign).
-- Returns the columns of sms_pipeline.intake.campaigns.Campaign, in its field order.
SELECT c.id, c.name, c.provider_side, c.local_time, c.time_zone, c.scheduled_for, c.created_at,
       c.cancelled_at, c.updated_at,
       COALESCE(counted.messages, 0) AS messages,
       COALESCE(counted.by_state, '{}'::jsonb) AS by_state,
       COALESCE(counted.sent, 0) AS sent,
       counted.first_sent_at,
       counted.last_sent_at
  FROM msg.campaign c
  LEFT JOIN LATERAL (
      SELECT sum(n)::bigint AS messages, jsonb_object_agg(state, n) AS by_state,
             sum(sent)::bigint AS sent, min(first_sent_at) AS first_sent_at, max(last_sent_at) AS last_sent_at
        FROM (SELECT CASE WHEN m.state = 'expired' AND m.state_reason = 'cancelled' THEN 'cancelled'
                          ELSE m.state::text END AS state,
                     count(*) AS n,
                     count(m.submitted_at) AS sent,
                     min(m.submitted_at) AS first_sent_at,
                     max(m.submitted_at) AS last_sent_at
                FROM msg.outbound_message m
               WHERE m.campaign_id = c.id
               GROUP BY 1) AS per_state
  ) AS counted ON true
 WHERE %(id)s::bigint IS NULL OR c.id = %(id)s::bigint
 ORDER BY c.scheduled_for, c.id
