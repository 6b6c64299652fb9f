-- Mark attempts superseded (an operator replay: one row; an automatic
-- re-send after proof of non-submission: a day's rows at once), with the
-- reason; only rows still in the state the caller checked (and, when
-- state_reason_was is given, still with that reason): a row a worker, a
-- reconciliation or another replay moved meanwhile is left alone.
-- Parameters: ids, created_ats (parallel arrays: the rows), state (the state
-- they must still be in), state_reason_was (NULL: any), state_reason, now.
-- Returns the (id, created_at) of each row superseded.
UPDATE msg.outbound_message m
   SET state = 'superseded', state_reason = %(state_reason)s::text, updated_at = %(now)s::timestamptz
  FROM unnest(%(ids)s::bigint[], %(created_ats)s::timestamptz[]) AS t(id, created_at)
 WHERE m.id = t.id AND m.created_at = t.created_at
   AND m.state = %(state)s::msg.message_state
   AND (%(state_reason_was)s::text IS NULL OR m.state_reason = %(state_reason_was)s::text)
RETURNING m.id, m.created_at
