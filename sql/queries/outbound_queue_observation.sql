-- The send queue as the hourly observation of msg/outbound_queue records it:
-- how much work waits to be handed to the provider (`pending`, due by now),
-- how much a worker holds (`claimed`), and since when the oldest of either
-- has been due (scheduled_for, else created_at; NULL when nothing waits).
-- Counts only, never recipients or text.
-- Parameters: now (application clock).
-- Returns (pending, claimed, oldest_due_at).
SELECT count(*) FILTER (WHERE state = 'pending') AS pending,
       count(*) FILTER (WHERE state = 'claimed') AS claimed,
       min(COALESCE(scheduled_for, created_at)) AS oldest_due_at
  FROM msg.outbound_message
 WHERE state IN ('pending', 'claimed')
   AND COALESCE(scheduled_for, created_at) <= %(now)s::timestamptz
