-- Link the stored events that were waiting uncorrelated to their message,
-- with their disposition (the day's new events are inserted linked).
-- Only events not linked yet, so a re-run changes nothing.
-- Parameters: now.
UPDATE dlr.delivery_receipts r
   SET message_id = x.message_id,
       message_created_at = x.message_created_at,
       correlation_result = 'matched',
       correlated_at = %(now)s::timestamptz,
       disposition = x.disposition
  FROM reconcile_work.reconcile_event_dispositions x
 WHERE x.stored
   AND r.receipt_id = x.receipt_id
   AND r.submit_month = x.submit_month
   AND r.message_id IS NULL
