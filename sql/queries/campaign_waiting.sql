-- A campaign's rows not yet sent (waiting here, with a worker, or held by
-- the provider), by state and due time: what a cancel or reschedule has
-- still to change, and how an unfinished one shows.
-- Parameters: campaign_id.
SELECT state::text, scheduled_for, count(*) AS messages
  FROM msg.outbound_message
 WHERE campaign_id = %(campaign_id)s AND queue_state IN ('pending', 'claimed', 'scheduled')  -- sending reads as claimed
 GROUP BY state, scheduled_for
 ORDER BY scheduled_for, state
