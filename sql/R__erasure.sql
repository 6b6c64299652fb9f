-- The live definition of what keeps an erased number erased
-- (docs/design.md#redaction-and-erasure): every msgId it was seen with is in
-- dlr.erased_message_ids (V76) with its marker, and every load applies it
-- where its rows land, in the load's own transaction.
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a function here, never in a new V file.

-- The marker that replaces the number of a row about msgId p_msg_id, or NULL
-- when that msgId was never erased. Used by the push receiver's insert.
CREATE OR REPLACE FUNCTION dlr.erased_marker(p_msg_id text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT marker FROM dlr.erased_message_ids WHERE provider_message_id = btrim(p_msg_id));

-- The report loads' hook, called after their rows are written and before
-- their commit: the rows just stored (p_kind 'day': day report p_scope_date;
-- 'getdlr': getDlr pull of day p_scope_date; 'txn': by-transaction report
-- p_transaction_id) whose msgId was erased take its marker. Returns how many.
-- Nothing to do (one index probe) until something was erased.
CREATE OR REPLACE FUNCTION dlr.mask_erased_rows(p_kind text, p_scope_date date, p_transaction_id text)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    masked bigint := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM dlr.erased_message_ids) THEN
        RETURN 0;
    END IF;
    CASE p_kind
    WHEN 'day' THEN
        UPDATE dlr.day_report_rows r SET mobile = e.marker
          FROM dlr.erased_message_ids e
         WHERE r.report_date = p_scope_date AND e.provider_message_id = btrim(r.msg_id)
           AND r.mobile IS DISTINCT FROM e.marker;
    WHEN 'getdlr' THEN
        UPDATE dlr.getdlr_rows r SET mobile = e.marker
          FROM dlr.erased_message_ids e
         WHERE r.report_date = p_scope_date AND e.provider_message_id = btrim(r.msg_id)
           AND r.mobile IS DISTINCT FROM e.marker;
    WHEN 'txn' THEN
        UPDATE dlr.txn_report_rows r SET mobile = e.marker
          FROM dlr.erased_message_ids e
         WHERE r.transaction_id = p_transaction_id AND e.provider_message_id = btrim(r.msg_id)
           AND r.mobile IS DISTINCT FROM e.marker;
    ELSE
        RAISE EXCEPTION 'dlr.mask_erased_rows: unknown load kind %', p_kind;
    END CASE;
    GET DIAGNOSTICS masked = ROW_COUNT;
    RETURN masked;
END;
$$;
