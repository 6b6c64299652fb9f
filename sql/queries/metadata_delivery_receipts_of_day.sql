-- Receipt events of dlr.delivery_receipts submitted in one provider day
-- [day_start, day_end), for the asset's dagster/row_count. The month bounds
-- let the planner prune to the partitions of the day.
-- Parameters: day_start, day_end.
SELECT count(*)
  FROM dlr.delivery_receipts
 WHERE submit_month BETWEEN dlr.submit_month(%(day_start)s::timestamptz)
                        AND dlr.submit_month(%(day_end)s::timestamptz)
   AND provider_submit_at >= %(day_start)s::timestamptz
   AND provider_submit_at < %(day_end)s::timestamptz
