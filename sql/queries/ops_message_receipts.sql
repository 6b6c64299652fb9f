-- The receipt events linked to a set of message rows, per row in the order
-- they happened (done time, else when they reached us).
-- Parameters: ids (message row ids).
SELECT message_id, provider_message_id, status_word, outcome, source, provider_submit_at, provider_done_at,
       first_seen_at, disposition
  FROM dlr.delivery_receipts
 WHERE message_id = ANY(%(ids)s::bigint[])
 ORDER BY message_id, COALESCE(provider_done_at, first_seen_at), first_seen_at, receipt_id
