-- Move the rows of a campaign that still wait here to the new time `at`;
-- each row's expires_at moves by as much as its due time, so it keeps the
-- same delay after it. Guarded by the state (a claimed row is left to its
-- request) and by the time (a row already at `at` is not touched, so a
-- second run changes nothing; a row already due is the worker's to send).
-- Parameters: campaign_id, at, now.
UPDATE msg.outbound_message
   SET expires_at = expires_at + (%(at)s::timestamptz - scheduled_for),
       scheduled_for = %(at)s::timestamptz,
       updated_at = %(now)s
 WHERE campaign_id = %(campaign_id)s AND queue_state = 'pending'  -- = state; the index reads queue_state
   AND scheduled_for IS DISTINCT FROM %(at)s::timestamptz
   AND scheduled_for > %(now)s::timestamptz
