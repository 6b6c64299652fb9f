-- Cancel the rows of a campaign that still wait here: pending -> expired,
-- reason cancelled, never sent. Guarded by the state: a row a worker has
-- claimed meanwhile is left to its request (the caller counts it); and by the
-- time: a row already due is the worker's to send (too late to change).
-- Parameters: campaign_id, now.
UPDATE msg.outbound_message
   SET state = 'expired', state_reason = 'cancelled', updated_at = %(now)s
 WHERE campaign_id = %(campaign_id)s AND queue_state = 'pending'  -- = state; the index reads queue_state
   AND scheduled_for > %(now)s::timestamptz
