-- Our side of `adopt verify`: a tenant's rows adopted from one legacy table
-- (adopted_from starts with its prefix), by provider-local day of
-- created_at (the legacy row's): legacy rows, recipients, and recipients
-- times segments.
-- Parameters: tenant_id, adopted_prefix, timezone, since (NULL: every day).
SELECT (created_at AT TIME ZONE %(timezone)s)::date AS day,
       count(DISTINCT adopted_from) AS messages,
       count(*) AS recipients,
       sum(segments) AS units
  FROM msg.outbound_message
 WHERE tenant_id = %(tenant_id)s
   AND left(adopted_from, length(%(adopted_prefix)s)) = %(adopted_prefix)s
   AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
 GROUP BY 1
 ORDER BY 1
