-- Which of these business keys of a tenant are held already, and by an
-- adopted row of which legacy row (adopted_from; NULL: a row of ours).
-- Parameters: tenant_id, business_keys (text[]).
-- Returns (business_key, adopted_from).
SELECT k.business_key, m.adopted_from
  FROM msg.business_key_registry k
  JOIN msg.outbound_message m ON m.id = k.message_id AND m.created_at = k.message_created_at
 WHERE k.tenant_id = %(tenant_id)s
   AND k.business_key = ANY(%(business_keys)s::text[])
