-- Give rows back to the queue (`-> pending`) from the state the caller names:
-- `claimed` for rows of a claim whose request was never started (the worker
-- is stopping, the breaker opened or a rate-limit pause began first), or
-- `sending` for a started request the provider provably took nothing of (no
-- connection was made, it refused our configuration, rate-limited us, or
-- refused with a code nobody classified). The reason stays on the row until
-- it is sent. Conditional on that state: a release applied twice, or after
-- the lease ran out, matches nothing.
-- Parameters: ids, created_ats (the rows' partition keys), released_from
-- (claimed | sending), reason, now.
-- Returns the rows moved.
UPDATE msg.outbound_message
   SET state = 'pending',
       state_reason = %(reason)s,
       updated_at = %(now)s::timestamptz
 WHERE id = ANY(%(ids)s::bigint[])
   AND created_at = ANY(%(created_ats)s::timestamptz[])  -- prunes partitions
   AND state = %(released_from)s::msg.message_state
RETURNING id, attempt_key
