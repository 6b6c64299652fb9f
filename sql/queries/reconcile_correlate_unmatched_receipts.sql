-- Stored receipt events whose msgId was not matched take its result
-- (reconcile_work.reconcile_unmatched); the day's new events take it when they are
-- inserted. Only events whose result changes.
-- Parameters: now.
UPDATE dlr.delivery_receipts r
   SET correlation_result = x.result,
       correlated_at = %(now)s::timestamptz
  FROM reconcile_work.reconcile_unmatched x
 WHERE r.provider_message_id = x.msg_id
   AND r.message_id IS NULL
   AND r.correlation_result IS DISTINCT FROM x.result
