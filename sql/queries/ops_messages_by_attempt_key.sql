-- Which message (tenant, business key) an attempt key belongs to, through
-- msg.message_lookup (written once per row at insert), optionally within
-- one tenant.
-- Parameters: value (the attempt key, a UUID as text), tenant (NULL: every tenant).
SELECT DISTINCT tenant_id, business_key FROM msg.message_lookup
 WHERE attempt_key = %(value)s::uuid AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
