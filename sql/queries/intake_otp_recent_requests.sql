-- The OTP requests of an intake batch, checked against the provider's
-- retry-after before anything is written: for each, whether its event is
-- already enqueued (known: it maps to its row and is never refused), and
-- whether another OTP (another business key) to the same tenant, number and
-- purpose was taken since `since` (recent: the provider would refuse this one).
-- Parameters: tenant_ids, recipients, purposes, business_keys (parallel
-- arrays, one entry per OTP request), since (now minus the retry-after).
-- Returns ord (1-based position in the arrays), known, recent; in ord order.
SELECT k.ord,
       EXISTS (SELECT 1 FROM msg.business_key_registry g
                WHERE g.tenant_id = k.tenant_id AND g.business_key = k.business_key) AS known,
       EXISTS (SELECT 1
                 FROM msg.outbound_message m
                 JOIN msg.otp_request r ON r.message_id = m.id AND r.message_created_at = m.created_at
                WHERE m.recipient = k.recipient
                  AND m.tenant_id = k.tenant_id
                  AND m.message_class = 'otp'
                  AND m.created_at > %(since)s::timestamptz
                  AND m.business_key <> k.business_key
                  AND r.purpose = k.purpose) AS recent
  FROM unnest(%(tenant_ids)s::text[], %(recipients)s::text[], %(purposes)s::text[], %(business_keys)s::text[])
       WITH ORDINALITY AS k(tenant_id, recipient, purpose, business_key, ord)
 ORDER BY k.ord
