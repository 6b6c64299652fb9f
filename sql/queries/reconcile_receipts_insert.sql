-- One provider day's raw loads (day report, by-transaction reports, getDlr
-- pulls) -> receipt events, keyed (msgId, canonical status word, submit
-- month). A replay of an event already stored, from any source or an
-- earlier download, is a no-op (ON CONFLICT DO NOTHING); a new status of a
-- known msgId is a new event. Status words are normalised through the
-- dlr.status_* tables (the mirror of core.statuses); a word outside them is
-- stored as "unmapped" and counted, never refused. Rows without a usable
-- msgId or submit time cannot be keyed: they are counted and skipped.
-- Correlation comes later: every event is stored uncorrelated.
-- Parameters: report_date, now (first_seen_at of new events).
-- Returns one row of counts.
WITH raw AS (
    SELECT 'day_report' AS source, msg_id, transaction_id, mobile, sender_name, status, cause, error_code,
           units, provider_submit_at, provider_done_at
      FROM dlr.day_report_rows WHERE report_date = %(report_date)s
    UNION ALL
    SELECT 'txn_report', msg_id, transaction_id, mobile, sender_name, status, cause, NULL,
           NULL, provider_submit_at, provider_done_at
      FROM dlr.txn_report_rows WHERE report_date = %(report_date)s
    UNION ALL
    SELECT 'getdlr', msg_id, transaction_id, mobile, sender_name, status, cause, error_code,
           NULL, provider_submit_at, provider_done_at
      FROM dlr.getdlr_rows WHERE report_date = %(report_date)s
),
normalised AS (
    SELECT r.source,
           CASE WHEN msg.is_clean_provider_id(btrim(r.msg_id)) THEN btrim(r.msg_id) END AS msg_id,
           CASE WHEN msg.is_clean_provider_id(btrim(r.transaction_id)) THEN btrim(r.transaction_id) END AS txn_id,
           NULLIF(ltrim(btrim(r.mobile), '+'), '') AS recipient,
           NULLIF(btrim(r.sender_name), '') AS sender_name,
           COALESCE(r.status, '') AS raw_status,
           COALESCE(a.status_word, w.cleaned) AS status_word,
           COALESCE(o.outcome, 'unmapped') AS outcome,
           NULLIF(btrim(r.cause), '') AS cause,
           NULLIF(btrim(r.error_code), '') AS error_code,
           CASE WHEN btrim(r.units) ~ '^[0-9]{1,4}$' THEN btrim(r.units)::smallint END AS units,
           r.provider_submit_at,
           r.provider_done_at
      FROM raw r
      CROSS JOIN LATERAL (SELECT dlr.clean_status_word(r.status) AS cleaned) w
      LEFT JOIN dlr.status_aliases a ON a.alias = w.cleaned
      LEFT JOIN dlr.status_outcomes o ON o.status_word = COALESCE(a.status_word, w.cleaned)
),
inserted AS (
    INSERT INTO dlr.delivery_receipts (
        provider_message_id, status_word, raw_status, outcome, provider_txn_id, recipient, sender_name,
        cause, error_code, units, provider_submit_at, submit_month, provider_done_at, source, first_seen_at)
    SELECT msg_id, status_word, raw_status, outcome, txn_id, recipient, sender_name,
           cause, error_code, units, provider_submit_at, dlr.submit_month(provider_submit_at), provider_done_at,
           source, %(now)s::timestamptz
      FROM normalised
     WHERE msg_id IS NOT NULL AND provider_submit_at IS NOT NULL
    ON CONFLICT (provider_message_id, status_word, submit_month) DO NOTHING
    RETURNING outcome
),
unmapped AS (
    SELECT status_word, count(*) AS n FROM normalised WHERE outcome = 'unmapped' GROUP BY status_word
)
SELECT (SELECT count(*) FROM normalised) AS source_rows,
       (SELECT count(*) FROM normalised WHERE msg_id IS NULL OR provider_submit_at IS NULL) AS unkeyed_rows,
       (SELECT count(*) FROM inserted) AS new_receipts,
       (SELECT count(*) FROM inserted WHERE outcome = 'unmapped') AS new_unmapped_receipts,
       (SELECT COALESCE(sum(n), 0) FROM unmapped)::bigint AS unmapped_rows,
       (SELECT COALESCE(jsonb_object_agg(status_word, n), '{}'::jsonb) FROM unmapped) AS unmapped_words
