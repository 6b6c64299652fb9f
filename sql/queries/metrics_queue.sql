-- The send queue for the metrics exporter: per class, the rows in each
-- queue state (every row, whatever its age), how many of them are due by
-- now, and since when the oldest due `pending` row has waited. One branch
-- per partial index, so each is read from its index and only the rows in
-- the queue are touched, however large the table: `pending` from the claim
-- index (index only: its state is its queue state), `claimed`/`sending`
-- from the lease index, `unknown` from the open-rows index.
-- Parameters: now (application clock).
-- Returns (message_class, state, messages, due, oldest_due_at).
SELECT message_class, state, count(*) AS messages,
       count(*) FILTER (WHERE due_at <= %(now)s::timestamptz) AS due,
       min(due_at) FILTER (WHERE state = 'pending' AND due_at <= %(now)s::timestamptz) AS oldest_due_at
  FROM (SELECT message_class, 'pending' AS state, COALESCE(scheduled_for, created_at) AS due_at
          FROM msg.outbound_message
         WHERE queue_state = 'pending'
        UNION ALL
        SELECT message_class, state::text, COALESCE(scheduled_for, created_at)
          FROM msg.outbound_message
         WHERE queue_state = 'claimed'
        UNION ALL
        SELECT message_class, 'unknown', COALESCE(scheduled_for, created_at)
          FROM msg.outbound_message
         WHERE queue_state = 'unknown') AS queue
 GROUP BY message_class, state
