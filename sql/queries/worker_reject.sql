-- Rows of a request the provider refused become `rejected` (not billed:
-- billable_units and cost stay NULL; the marts count them at zero). Used for
-- the `invalidMobile` numbers of an accepted request (first half of the
-- fan-out, so a refused number can never be counted as billed) and for
-- message-level refusals of a whole request (recipients NULL = every row).
-- Conditional on `sending`: an answer applied twice matches nothing.
-- Parameters: ids, created_ats (the rows' partition keys), recipients (text[]
-- or NULL), reason, status_code, cause, transaction_id, now.
-- Returns the rows moved.
UPDATE msg.outbound_message
   SET state = 'rejected',
       state_reason = %(reason)s,
       provider_status_code = %(status_code)s,
       provider_cause = %(cause)s,
       provider_txn_id = %(transaction_id)s,
       updated_at = %(now)s::timestamptz
 WHERE id = ANY(%(ids)s::bigint[])
   AND created_at = ANY(%(created_ats)s::timestamptz[])  -- prunes partitions
   AND state = 'sending'
   AND (%(recipients)s::text[] IS NULL OR recipient = ANY(%(recipients)s::text[]))
RETURNING id, attempt_key
