-- Whole seconds since the most recent receipt event was stored (first seen),
-- from the application clock; never negative. NULL only when no receipt has
-- ever been stored (a new installation): the health check treats that as
-- "no data yet", not as healthy.
-- Parameters: now.
SELECT CASE WHEN max(first_seen_at) IS NULL THEN NULL
            ELSE GREATEST(0, floor(EXTRACT(EPOCH FROM (%(now)s::timestamptz - max(first_seen_at)))))::bigint
       END AS seconds_since_last_receipt
  FROM dlr.delivery_receipts
