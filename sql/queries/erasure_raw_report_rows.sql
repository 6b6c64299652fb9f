-- One batch of `messages forget` on a raw report load (dlr.day_report_rows,
-- dlr.txn_report_rows, dlr.getdlr_rows), by the primary keys erasure_row_keys
-- found before the lock: the number, in whatever form the provider wrote it
-- (re-checked: a reload may have rewritten the row), becomes the marker; the
-- msgIds join dlr.erased_message_ids, so a reload of the report lands them
-- with the marker.
-- The raw load is {table}; its primary key is {key} (report_date or
-- transaction_id, of type {key_type}) and {line} (line_no or row_no, an integer).
-- Identifiers: table, key, key_type, line.
-- Parameters: row_keys (JSON array of primary keys), forms (the number's digit strings), marker.
-- Returns the rows erased.
WITH erased AS (
    UPDATE {table} r SET mobile = %(marker)s
      FROM jsonb_to_recordset(%(row_keys)s::jsonb) AS k({key} {key_type}, {line} integer)
     WHERE r.{key} = k.{key} AND r.{line} = k.{line}
       AND regexp_replace(r.mobile, '[^0-9]', '', 'g') = ANY(%(forms)s::text[])
       AND r.mobile !~ '^erased:'
    RETURNING btrim(r.msg_id) AS msg_id
), ids AS (
    INSERT INTO dlr.erased_message_ids (provider_message_id, marker)
    SELECT DISTINCT msg_id, %(marker)s FROM erased WHERE msg.is_clean_provider_id(msg_id) AND msg_id IS NOT NULL
    ON CONFLICT (provider_message_id) DO NOTHING
)
SELECT count(*) FROM erased
