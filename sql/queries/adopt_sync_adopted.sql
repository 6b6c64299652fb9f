-- The adopted rows of some legacy rows (adopt sync and verify compare their
-- transaction ids with the legacy side's): looked up by recipient (indexed)
-- and adopted_from.
-- Parameters: tenant_id, recipients (text[]), adopted_froms (text[]).
-- Returns (adopted_from, recipient, state, provider_txn_id).
SELECT adopted_from, recipient, state::text, provider_txn_id
  FROM msg.outbound_message
 WHERE tenant_id = %(tenant_id)s
   AND recipient = ANY(%(recipients)s::text[])
   AND adopted_from = ANY(%(adopted_froms)s::text[])
