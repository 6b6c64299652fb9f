-- Messages by class and state now, of those whose attempt time (msg.attempt_at,
-- else created_at: a message's day in the marts) is in
-- [since, now]: a range of the marts' attempt-time index in each month
-- partition, so the cost follows the window's traffic, never the table's.
-- Parameters: since, now.
-- Returns (message_class, state, messages).
SELECT message_class, state::text, count(*) AS messages
  FROM msg.outbound_message
 WHERE COALESCE(msg.attempt_at(submitted_at, claimed_at, scheduled_for), created_at) >= %(since)s::timestamptz
   AND COALESCE(msg.attempt_at(submitted_at, claimed_at, scheduled_for), created_at) <= %(now)s::timestamptz
 GROUP BY message_class, state
