-- The durable "request started" step: just before a request goes out, its
-- rows move `claimed -> sending` in one short committed statement, so a row
-- still `claimed` provably never left (an expired lease gives it back to
-- `pending`), and a `sending` row may have (an expired lease makes it
-- `unknown`). A row whose expires_at has passed since it was claimed (an OTP
-- whose code is no longer valid) becomes `expired / expired_unsent` instead
-- and is left out of the request: nothing goes out late.
-- Conditional on `claimed`: a row the lease gave back is not sent by this
-- worker.
-- Parameters: ids, created_ats (the rows' partition keys), now (application clock).
-- Returns one row: the ids and attempt keys of the rows expired instead, and
-- the ids left out (no longer `claimed`); every other id is `sending`. Short
-- lists (usually empty) instead of a row per recipient.
WITH moved AS (
    UPDATE msg.outbound_message
       SET state = CASE WHEN expires_at IS NOT NULL AND expires_at <= %(now)s::timestamptz
                        THEN 'expired' ELSE 'sending' END::msg.message_state,
           state_reason = CASE WHEN expires_at IS NOT NULL AND expires_at <= %(now)s::timestamptz
                               THEN 'expired_unsent' ELSE state_reason END,
           updated_at = %(now)s::timestamptz
     WHERE id = ANY(%(ids)s::bigint[])
       AND created_at = ANY(%(created_ats)s::timestamptz[])  -- prunes partitions
       AND state = 'claimed'
    RETURNING id, attempt_key, state
)
SELECT COALESCE(array_agg(id) FILTER (WHERE state = 'expired'), '{}') AS expired_ids,
       COALESCE(array_agg(attempt_key) FILTER (WHERE state = 'expired'), '{}') AS expired_attempt_keys,
       ARRAY(SELECT unnest(%(ids)s::bigint[]) EXCEPT SELECT id FROM moved) AS left_out_ids
  FROM moved
