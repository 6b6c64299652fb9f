-- What message retention would do with each monthly message partition, and
-- why (msg.message_partition_retention, docs/design.md#retention); read-only.
-- Parameters: messages_before. Returns one row per partition, oldest first.
SELECT partition::text AS partition, month, message_rows, rows_estimated, last_attempt_at, verdict,
       unbuilt_mart, unbuilt_attempt_at
  FROM msg.message_partition_retention(%(messages_before)s::timestamptz)
 ORDER BY month
