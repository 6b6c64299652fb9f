-- What a campaign has cost so far: its billed rows (submitted_at set) per
-- currency, with the units billed and the rows still unpriced (no rate: no
-- cost, never a silent 0; their currency is NULL).
-- Parameters: campaign_id.
SELECT cost_currency, sum(cost) AS cost, count(*) AS billed, sum(billable_units)::bigint AS units,
       count(*) FILTER (WHERE cost IS NULL) AS unpriced
  FROM msg.outbound_message
 WHERE campaign_id = %(campaign_id)s AND submitted_at IS NOT NULL
 GROUP BY cost_currency
 ORDER BY cost_currency NULLS LAST
