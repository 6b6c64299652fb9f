-- One batch of `messages forget` on dlr.receipt_push_inbox, by the primary keys
-- erasure_row_keys found before the lock: the number (re-checked) becomes
-- the marker (the inbox guard allows this one change); the msgIds join
-- dlr.erased_message_ids, so a repeated push of them lands with the marker.
-- Parameters: row_keys (JSON array of primary keys), forms (the number's digit strings), marker.
-- Returns the rows erased.
WITH erased AS (
    UPDATE dlr.receipt_push_inbox p SET recipient = %(marker)s
      FROM jsonb_to_recordset(%(row_keys)s::jsonb) AS k(provider_message_id text, error_code text)
     WHERE p.provider_message_id = k.provider_message_id AND p.error_code = k.error_code
       AND p.recipient = ANY(%(forms)s::text[])
    RETURNING p.provider_message_id
), ids AS (
    INSERT INTO dlr.erased_message_ids (provider_message_id, marker)
    SELECT DISTINCT provider_message_id, %(marker)s FROM erased
    ON CONFLICT (provider_message_id) DO NOTHING
)
SELECT count(*) FROM erased
