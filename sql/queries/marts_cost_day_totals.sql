-- Totals of marts.cost_daily per day and currency over all tenants,
-- channels, classes and senders, for a range of days (both ends included).
-- An amount is NULL as soon as one of its rows is (unpriced: unknown, and
-- sum() would skip it, understating the total).
-- Parameters: first, last (provider-local days).
SELECT day, currency,
       sum(messages_submitted)::bigint  AS messages_submitted,
       sum(billable_units)::bigint      AS billable_units,
       CASE WHEN count(cost) = count(*) THEN sum(cost) END AS cost,
       sum(rejected_messages)::bigint   AS rejected_messages,
       sum(unpriced_units)::bigint      AS unpriced_units,
       CASE WHEN count(cost_of_failed) = count(*) THEN sum(cost_of_failed) END AS cost_of_failed,
       sum(unknown_messages)::bigint    AS unknown_messages,
       sum(unknown_units)::bigint       AS unknown_units,
       CASE WHEN count(unknown_cost_at_risk) = count(*) THEN sum(unknown_cost_at_risk) END AS unknown_cost_at_risk
  FROM marts.cost_daily
 WHERE day >= %(first)s AND day <= %(last)s
 GROUP BY day, currency
 ORDER BY day, currency NULLS FIRST
