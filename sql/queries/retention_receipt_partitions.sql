-- Receipt partitions the hourly upkeep drops (their month ends on or before
-- receipts_before: dlr.drop_receipt_partitions_before), with the planner's row
-- estimate (NULL before the first ANALYZE); read-only.
-- Parameters: receipts_before. Returns one row per partition, oldest first.
SELECT p.partition::text AS partition, p.month, nullif(greatest(c.reltuples, -1), -1)::bigint AS estimated_rows
  FROM msg.month_partitions('dlr.delivery_receipts', 'receipts') AS p
  JOIN pg_class AS c ON c.oid = p.partition
 WHERE (p.month + interval '1 month')::timestamp AT TIME ZONE 'UTC' <= %(receipts_before)s::timestamptz
 ORDER BY p.month
