-- Receipt events stored in [since, now] (first_seen_at: when reconciliation
-- stored them), by source and outcome: a range of the first-seen index.
-- Parameters: since, now.
-- Returns (source, outcome, events).
SELECT source, outcome, count(*) AS events
  FROM dlr.delivery_receipts
 WHERE first_seen_at >= %(since)s::timestamptz
   AND first_seen_at <= %(now)s::timestamptz
 GROUP BY source, outcome
