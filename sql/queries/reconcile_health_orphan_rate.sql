-- Share of the receipt events stored in [since, now] that no correlation
-- pass matched (orphans still open). 0 when nothing was stored.
-- Parameters: since, now. Returns (receipts, orphaned, orphan_rate).
SELECT count(*) AS receipts,
       count(*) FILTER (WHERE message_id IS NULL AND correlation_result = 'not_found') AS orphaned,
       COALESCE((count(*) FILTER (WHERE message_id IS NULL AND correlation_result = 'not_found'))::numeric
                / NULLIF(count(*), 0), 0) AS orphan_rate
  FROM dlr.delivery_receipts
 WHERE first_seen_at >= %(since)s::timestamptz
   AND first_seen_at <= %(now)s::timestamptz
