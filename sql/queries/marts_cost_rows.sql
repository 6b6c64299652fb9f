-- Every marts.cost_daily row of a range of days (both ends included),
-- optionally one tenant's, for finance (money as the mart's NUMERIC; NULL
-- where unpriced).
-- Parameters: first, last (provider-local days), tenant (NULL: every tenant).
SELECT day, tenant_id, channel, message_class, sender_id, currency,
       messages_submitted, billable_units, cost, rejected_messages, unpriced_units, cost_of_failed,
       unknown_messages, unknown_units, unknown_cost_at_risk
  FROM marts.cost_daily
 WHERE day >= %(first)s AND day <= %(last)s
   AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
 ORDER BY day, tenant_id, channel, message_class, sender_id NULLS FIRST, currency NULLS FIRST
