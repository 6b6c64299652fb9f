-- The outbound rows of adopted legacy recipients, never `pending`: each in
-- its final or awaiting state, state_reason 'adopted', adopted_from set,
-- claimed at the legacy created_at (its attempt time, so its provider day is
-- created_at's). A billed row (submitted, superseded) is submitted at
-- created_at and costs segments x the rate-card price in force then
-- (msg.unit_price, the card's days in price_time_zone), NULL when no price
-- applies (counted as unpriced, never 0). Keys registered meanwhile are
-- skipped (a concurrent adoption of the same rows).
-- Parameters: tenant_id, message_class, sender_id, price_time_zone, now, and
-- one array per column, element i for row i: business_keys, recipients,
-- bodies, encodings, segments, states, billed (boolean[]), transaction_ids,
-- created_ats, fingerprints (bytea[]), adopted_froms.
-- Returns (business_key, unpriced) of every row inserted.
INSERT INTO msg.outbound_message (
    business_key, tenant_id, channel, message_class, recipient, sender_id, body, encoding, segments,
    state, state_reason, provider_txn_id, created_at, claimed_at, submitted_at, billable_units, cost,
    cost_currency, message_fingerprint, adopted_from, updated_at)
SELECT r.business_key, %(tenant_id)s, 'sms'::msg.message_channel, %(message_class)s, r.recipient, %(sender_id)s,
       r.body, r.encoding, r.segments, r.state::msg.message_state, 'adopted', r.transaction_id, r.created_at,
       r.created_at,
       CASE WHEN r.billed THEN r.created_at END,
       CASE WHEN r.billed THEN r.segments END,
       CASE WHEN r.billed THEN r.segments * p.unit_price END,
       CASE WHEN r.billed THEN p.currency END,
       r.fingerprint, r.adopted_from, %(now)s::timestamptz
  FROM unnest(%(business_keys)s::text[], %(recipients)s::text[], %(bodies)s::text[], %(encodings)s::text[],
              %(segments)s::smallint[], %(states)s::text[], %(billed)s::boolean[], %(transaction_ids)s::text[],
              %(created_ats)s::timestamptz[], %(fingerprints)s::bytea[], %(adopted_froms)s::text[])
       WITH ORDINALITY AS r(business_key, recipient, body, encoding, segments, state, billed, transaction_id,
                            created_at, fingerprint, adopted_from, ord)
  LEFT JOIN LATERAL msg.unit_price(%(tenant_id)s, 'sms'::msg.message_channel, %(message_class)s, r.created_at,
                                   %(price_time_zone)s) AS p ON true
 WHERE NOT EXISTS (SELECT 1 FROM msg.business_key_registry k
                    WHERE k.tenant_id = %(tenant_id)s AND k.business_key = r.business_key)
 ORDER BY r.ord
RETURNING business_key, (billable_units IS NOT NULL AND cost IS NULL) AS unpriced
