-- Every marts.campaign_daily row of a range of days (both ends included),
-- optionally one tenant's, for `sms-pipeline report cost --by campaign`
-- (money as the mart's NUMERIC; NULL where unpriced).
-- Parameters: first, last (provider-local days), tenant (NULL: every tenant).
SELECT day, campaign_id, campaign_name, tenant_id, message_class, currency,
       messages, submitted, billable_units, cost, delivered, failed, expired, cancelled, rejected, pending,
       delivery_ratio, median_latency_seconds
  FROM marts.campaign_daily
 WHERE day >= %(first)s AND day <= %(last)s
   AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
 ORDER BY day, campaign_id, tenant_id, message_class
