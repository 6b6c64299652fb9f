-- The provider transactions (uuIds) holding rows of a campaign (`scheduled`)
-- that a cancel or reschedule has still to change, in the order they were
-- sent: for a reschedule (`at` given) those whose rows are not at `at` yet,
-- for a cancel (`at` NULL) every one.
-- Parameters: campaign_id, at.
SELECT provider_txn_id, provider_campaign_id, count(*) AS messages
  FROM msg.outbound_message
 WHERE campaign_id = %(campaign_id)s AND queue_state = 'scheduled'  -- = state
   AND (%(at)s::timestamptz IS NULL OR scheduled_for IS DISTINCT FROM %(at)s::timestamptz)
 GROUP BY provider_txn_id, provider_campaign_id
 ORDER BY min(id)
