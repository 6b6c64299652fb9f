-- Rows of a request whose fate cannot be known (read time-out, reset after
-- writing, HTTP 5xx, unparseable answer) become `unknown`: possibly billed,
-- never re-sent blind; only evidence from the reports resolves them.
-- Conditional on `claimed`: an answer applied twice matches nothing.
-- Parameters: ids, created_ats (the rows' partition keys), reason, now.
-- Returns the rows moved.
UPDATE msg.outbound_message
   SET state = 'unknown',
       state_reason = %(reason)s,
       updated_at = %(now)s::timestamptz
 WHERE id = ANY(%(ids)s::bigint[])
   AND created_at = ANY(%(created_ats)s::timestamptz[])  -- prunes partitions
   AND state = 'claimed'
RETURNING id, attempt_key
