-- Monthly partitions of the message and receipt tables for the current
-- month (UTC) and the two after it, so no insert ever meets a missing one.
-- Parameters: now. Returns (messages, receipts): partitions created.
SELECT msg.ensure_partitions(%(now)s::timestamptz, 2) AS messages,
       dlr.ensure_partitions(%(now)s::timestamptz, 2) AS receipts
