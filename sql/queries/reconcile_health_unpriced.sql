-- Billed rows (submitted_at set) without a cost because no rate-card price
-- applied, submitted in [since, now]: their units are a bill finance
-- cannot price. Never counted as 0.
-- Parameters: since, now. Returns (unpriced_rows, unpriced_units).
SELECT count(*) AS unpriced_rows,
       COALESCE(sum(billable_units), 0)::bigint AS unpriced_units
  FROM msg.outbound_message
 WHERE submitted_at >= %(since)s::timestamptz
   AND submitted_at <= %(now)s::timestamptz
   AND cost IS NULL
