-- One batch of `messages forget` on dlr.delivery_receipts, by the primary keys
-- erasure_row_keys found before the lock: the number (re-checked) becomes
-- the marker; the receipt's msgId joins dlr.erased_message_ids.
-- Parameters: row_keys (JSON array of primary keys), forms (the number's digit strings), marker.
-- Returns the rows erased.
WITH erased AS (
    UPDATE dlr.delivery_receipts r SET recipient = %(marker)s
      FROM jsonb_to_recordset(%(row_keys)s::jsonb) AS k(receipt_id bigint, submit_month date)
     WHERE r.receipt_id = k.receipt_id AND r.submit_month = k.submit_month
       AND regexp_replace(r.recipient, '[^0-9]', '', 'g') = ANY(%(forms)s::text[])
       AND r.recipient !~ '^erased:'
    RETURNING r.provider_message_id
), ids AS (
    INSERT INTO dlr.erased_message_ids (provider_message_id, marker)
    SELECT DISTINCT provider_message_id, %(marker)s FROM erased WHERE provider_message_id IS NOT NULL
    ON CONFLICT (provider_message_id) DO NOTHING
)
SELECT count(*) FROM erased
