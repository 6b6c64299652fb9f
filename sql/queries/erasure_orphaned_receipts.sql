-- One batch of `messages forget` on dlr.orphaned_receipts, by the primary keys
-- erasure_row_keys found before the lock: the number in the payload kept
-- as received ('mobile', re-checked) becomes the marker; the msgId joins
-- dlr.erased_message_ids.
-- Parameters: row_keys (JSON array of primary keys), forms (the number's digit strings), marker.
-- Returns the rows erased.
WITH erased AS (
    UPDATE dlr.orphaned_receipts o
       SET raw_payload = jsonb_set(o.raw_payload, ARRAY['mobile'], to_jsonb(%(marker)s::text))
      FROM jsonb_to_recordset(%(row_keys)s::jsonb) AS k(orphan_id bigint)
     WHERE o.orphan_id = k.orphan_id
       AND regexp_replace(o.raw_payload ->> 'mobile', '[^0-9]', '', 'g') = ANY(%(forms)s::text[])
       AND o.raw_payload ->> 'mobile' !~ '^erased:'
    RETURNING o.provider_message_id
), ids AS (
    INSERT INTO dlr.erased_message_ids (provider_message_id, marker)
    SELECT DISTINCT provider_message_id, %(marker)s FROM erased
    ON CONFLICT (provider_message_id) DO NOTHING
)
SELECT count(*) FROM erased
