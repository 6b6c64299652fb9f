-- Totals of marts.cost_daily per day and currency over all tenants,
-- channels, classes and senders, for a range of days (both ends included).
-- Parameters: first, last (provider-local days).
SELECT day, currency,
       sum(messages_submitted)::bigint AS messages_submitted,
       sum(billable_units)::bigint     AS billable_units,
       sum(cost)                       AS cost,
       sum(rejected_messages)::bigint  AS rejected_messages,
       sum(unpriced_units)::bigint     AS unpriced_units,
       sum(cost_of_failed)             AS cost_of_failed
  FROM marts.cost_daily
 WHERE day >= %(first)s AND day <= %(last)s
 GROUP BY day, currency
 ORDER BY day, currency NULLS FIRST
