-- Give back rows of a claim whose request was never started: `claimed ->
-- pending` (the worker is stopping, the breaker opened or a rate limit
-- pause began before the request). Nothing about them left the process. The
-- reason stays on the row until it is sent. Conditional on `claimed`: a
-- release applied twice matches nothing.
-- Parameters: ids, created_ats (the rows' partition keys), reason, now.
-- Returns the rows moved.
UPDATE msg.outbound_message
   SET state = 'pending',
       state_reason = %(reason)s,
       updated_at = %(now)s::timestamptz
 WHERE id = ANY(%(ids)s::bigint[])
   AND created_at = ANY(%(created_ats)s::timestamptz[])  -- prunes partitions
   AND state = 'claimed'
RETURNING id, attempt_key
