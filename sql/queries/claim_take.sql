-- The second step of a claim: the rows of the worker's next request, locked
-- by claim_candidates.sql in this transaction, become `claimed`, with the
-- claimed_at and attempt_count that statement returned.
-- Parameters: ids, created_ats (the rows' partition keys), now (application clock).
-- Returns the ids claimed (all of them: the rows are locked and `pending`).
UPDATE msg.outbound_message
   SET state = 'claimed',
       claimed_at = %(now)s::timestamptz,
       attempt_count = attempt_count + 1,
       updated_at = %(now)s::timestamptz
 WHERE id = ANY(%(ids)s::bigint[])
   AND created_at = ANY(%(created_ats)s::timestamptz[])  -- prunes partitions
   AND state = 'pending'
RETURNING id
