-- The provider transactions (uuIds) holding rows of a campaign (`scheduled`)
-- that a cancel or reschedule has still to change, in the order they were
-- sent: for a reschedule (`at` given) those whose rows are not at `at` yet,
-- for a cancel (`at` NULL) every one. With each its rows' time (one per
-- transaction; the earliest, should they differ): once it has passed, the
-- provider may be sending that transaction, so the caller leaves it alone,
-- whatever the campaign's own time says (a reschedule cut off by the send
-- time leaves some transactions at the new time, still to be controlled).
-- Parameters: campaign_id, at.
-- Returns (provider_txn_id, provider_campaign_id, messages, scheduled_for).
SELECT provider_txn_id, provider_campaign_id, count(*) AS messages, min(scheduled_for) AS scheduled_for
  FROM msg.outbound_message
 WHERE campaign_id = %(campaign_id)s AND queue_state = 'scheduled'  -- = state
   AND (%(at)s::timestamptz IS NULL OR scheduled_for IS DISTINCT FROM %(at)s::timestamptz)
 GROUP BY provider_txn_id, provider_campaign_id
 ORDER BY min(id)
