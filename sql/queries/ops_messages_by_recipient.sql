-- Every message (tenant, business key) ever addressed to a recipient,
-- through msg.message_lookup, optionally within one tenant.
-- Parameters: value (the normalised recipient), tenant (NULL: every tenant).
SELECT DISTINCT tenant_id, business_key FROM msg.message_lookup
 WHERE recipient = %(value)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
