-- Receipt events that no correlation pass matched (`not_found` after all
-- three) become orphans, with their fields as received in raw_payload. One
-- orphan per event key, so a re-run adds nothing. Ambiguous events are not
-- orphans: they were matched, twice.
-- every_waiting: false in a pass over new pushes: only the events of the
-- msgIds it tried (reconcile_work.reconcile_uncorrelated; see reconcile_correlate_uncorrelated).
-- Parameters: every_waiting (boolean). Returns how many orphans were opened.
WITH opened AS (
    INSERT INTO dlr.orphaned_receipts (provider_message_id, status_word, raw_status, source, raw_payload, received_at)
    SELECT r.provider_message_id, r.status_word, r.raw_status, r.source,
           jsonb_strip_nulls(jsonb_build_object(
               'msgId', r.provider_message_id,
               'transactionId', r.provider_txn_id,
               'mobile', r.recipient,
               'senderName', r.sender_name,
               'status', r.raw_status,
               'cause', r.cause,
               'errorCode', r.error_code,
               'units', r.units,
               'submitTime', r.provider_submit_at,
               'deliveryTime', r.provider_done_at,
               'source', r.source)),
           r.first_seen_at
      FROM dlr.delivery_receipts r
     WHERE r.message_id IS NULL
       AND r.correlation_result = 'not_found'
       AND (%(every_waiting)s OR r.provider_message_id IN (SELECT msg_id FROM reconcile_work.reconcile_uncorrelated))
    ON CONFLICT (provider_message_id, status_word) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM opened
