-- Message and receipt partitions from the month of `at` on (the demo's
-- virtual clock starts days back, maybe in an earlier month).
-- Parameters: at.
SELECT msg.ensure_partitions(%(at)s), dlr.ensure_partitions(%(at)s)
