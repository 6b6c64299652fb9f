-- Which message (tenant, business key) an operator means by a business key,
-- optionally within one tenant (a key is unique per tenant only).
-- Parameters: value (the business key), tenant (NULL: every tenant).
SELECT tenant_id, business_key FROM msg.business_key_registry
 WHERE business_key = %(value)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
