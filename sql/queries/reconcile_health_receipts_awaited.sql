-- Whether receipts have stopped: when the last receipt event was stored,
-- and how many messages were submitted since then that are old enough to
-- have a receipt by now. A quiet day (nothing sent since the last receipt)
-- is not an outage; messages sent after the last receipt and still without
-- one after the expected lag are.
-- Parameters: now, expected_lag (interval).
-- Returns (last_receipt_at, awaiting).
WITH last_receipt AS (
    SELECT max(first_seen_at) AS at FROM dlr.delivery_receipts
)
SELECT l.at AS last_receipt_at,
       (SELECT count(*)
          FROM msg.outbound_message m
         WHERE m.submitted_at >= COALESCE(l.at, '-infinity'::timestamptz)
           AND m.submitted_at < %(now)s::timestamptz - %(expected_lag)s::interval) AS awaiting
  FROM last_receipt l
