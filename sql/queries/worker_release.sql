-- Give a started request's rows back to the queue: `sending -> pending`,
-- only when the provider provably took nothing (no connection was made, it
-- refused our configuration, rate-limited us, or refused with a code nobody
-- classified). The reason stays on the row until it is sent. Conditional on
-- `sending`: a release applied twice, or after the lease ran out (`unknown`),
-- matches nothing.
-- Parameters: ids, created_ats (the rows' partition keys), reason, now.
-- Returns the rows moved.
UPDATE msg.outbound_message
   SET state = 'pending',
       state_reason = %(reason)s,
       updated_at = %(now)s::timestamptz
 WHERE id = ANY(%(ids)s::bigint[])
   AND created_at = ANY(%(created_ats)s::timestamptz[])  -- prunes partitions
   AND state = 'sending'
RETURNING id, attempt_key
