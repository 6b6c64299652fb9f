-- The send queue as the hourly observation of msg/outbound_queue records it:
-- how much work waits to be handed to the provider (`pending`, due by now),
-- how much a worker holds before its request starts (`claimed`), how much
-- is in a request in flight (`sending`), and since when the oldest of these
-- has been due (scheduled_for, else created_at; NULL when nothing waits).
-- Counts only, never recipients or text.
-- Parameters: now (application clock).
-- Returns (pending, claimed, sending, oldest_due_at).
SELECT count(*) FILTER (WHERE state = 'pending') AS pending,
       count(*) FILTER (WHERE state = 'claimed') AS claimed,
       count(*) FILTER (WHERE state = 'sending') AS sending,
       min(COALESCE(scheduled_for, created_at)) AS oldest_due_at
  FROM msg.outbound_message
 WHERE state IN ('pending', 'claimed', 'sending')
   AND COALESCE(scheduled_for, created_at) <= %(now)s::timestamptz
