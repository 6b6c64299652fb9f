-- Adopted `unknown` rows whose legacy row later recorded a usable
-- transaction id (adopt sync): they become `submitted` with that id, billed
-- as the adoption bills (adopt_insert.sql): submitted at the legacy
-- created_at, segments x msg.unit_price in force then (the card's days in
-- price_time_zone), cost NULL when no price applies. Guarded: only a row
-- still `unknown` without an id moves (the day report may have settled it
-- meanwhile), so no billed value is overwritten.
-- Parameters: tenant_id, price_time_zone, now, and pairwise arrays
-- adopted_froms, recipients, transaction_ids (element i for row i).
-- Returns unpriced (boolean) per row moved.
UPDATE msg.outbound_message m
   SET state = 'submitted',
       provider_txn_id = u.transaction_id,
       submitted_at = m.created_at,
       billable_units = m.segments,
       (cost, cost_currency) = (
           SELECT m.segments * p.unit_price, p.currency
             FROM msg.unit_price(m.tenant_id, m.channel, m.message_class, m.created_at, %(price_time_zone)s) AS p),
       updated_at = %(now)s::timestamptz
  FROM unnest(%(adopted_froms)s::text[], %(recipients)s::text[], %(transaction_ids)s::text[])
       AS u(adopted_from, recipient, transaction_id)
 WHERE m.tenant_id = %(tenant_id)s
   AND m.recipient = u.recipient
   AND m.adopted_from = u.adopted_from
   AND m.state = 'unknown'
   AND m.provider_txn_id IS NULL
RETURNING (m.billable_units IS NOT NULL AND m.cost IS NULL) AS unpriced
