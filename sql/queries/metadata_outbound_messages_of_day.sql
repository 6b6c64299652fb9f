-- Messages of msg.outbound_message created in one provider day
-- [day_start, day_end) (the partition key), for the reconciliation asset's
-- dagster/row_count.
-- Parameters: day_start, day_end.
SELECT count(*)
  FROM msg.outbound_message
 WHERE created_at >= %(day_start)s::timestamptz
   AND created_at < %(day_end)s::timestamptz
