-- Fan-out, second half: every row of an accepted request that is still
-- `sending` (the refused numbers were written `rejected` just before) becomes
-- `submitted` and is billed at this moment: billable_units = segments (one
-- recipient per row), cost = units x the rate-card price valid at submission
-- (msg.unit_price, the card's days taken in the provider's zone), NULL when
-- no price applies: counted as unpriced, never a silent 0. The text
-- fingerprint of a request whose text exists only now (an OTP's code) and
-- the answer's createTime (OTP) are kept for correlation by reconstruction.
-- Conditional on `sending`: the same answer applied twice matches nothing.
-- Parameters: ids, created_ats (the rows' partition keys), transaction_id,
-- campaign_id, status_code (the answer's statusCode), fingerprint (bytea or
-- NULL = keep intake's), created_at (the answer's createTime or NULL), now,
-- price_time_zone.
-- Returns the rows moved.
UPDATE msg.outbound_message m
   SET state = 'submitted',
       state_reason = NULL,
       provider_txn_id = %(transaction_id)s,
       provider_campaign_id = %(campaign_id)s,
       provider_status_code = %(status_code)s,
       submitted_at = %(now)s::timestamptz,
       message_fingerprint = COALESCE(%(fingerprint)s::bytea, m.message_fingerprint),
       provider_created_at = %(created_at)s::timestamptz,
       billable_units = m.segments,
       (cost, cost_currency) = (
           SELECT m.segments * p.unit_price, p.currency
             FROM msg.unit_price(m.tenant_id, m.channel, m.message_class,
                                 %(now)s::timestamptz, %(price_time_zone)s) AS p),
       updated_at = %(now)s::timestamptz
 WHERE m.id = ANY(%(ids)s::bigint[])
   AND m.created_at = ANY(%(created_ats)s::timestamptz[])  -- prunes partitions
   AND m.state = 'sending'
RETURNING m.id, m.attempt_key, m.cost IS NULL AS unpriced
