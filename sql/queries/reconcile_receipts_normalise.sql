-- One provider day's raw loads (day report, by-transaction reports, getDlr
-- pulls) and the receipt pushes not reconciled yet, one row per source row,
-- normalised: clean ids or NULL, the status word through the dlr.status_*
-- tables (the mirror of core.statuses; a word outside them is kept as
-- "unmapped", never refused), units only when they are a number.
-- source_rank orders the sources when the same event arrives from several:
-- the day report's row is the one kept, a push's last (it has no units, no
-- sender, no text). The text's keyed fingerprint comes with the day report
-- and getDlr rows (the by-transaction report and the push have no text).
-- A push has no status word: its error code is the provider's code table's
-- word (dlr.delivery_codes, the description as cause); a code missing there
-- becomes the word CODE_<code>, outside the vocabulary, so unmapped: never
-- guessed (a delivered time is stamped on failures too).
-- Parameters: report_date (the day's raw loads; NULL: none), push_days
-- (date[]: the provider days whose waiting pushes are read; docs/design.md#receipt-push).
-- Creates the work table reconcile_work.reconcile_source_rows.
CREATE UNLOGGED TABLE reconcile_work.reconcile_source_rows AS
WITH raw AS (
    -- Each source's word is cleaned here, in its own scan: computed once per
    -- row, and by the parallel workers when the plan has them (a LATERAL
    -- subquery above the union kept it in the leader).
    SELECT 'day_report' AS source, 1 AS source_rank, msg_id, transaction_id, mobile, sender_name, status,
           dlr.clean_status_word(status) AS cleaned_status, cause, error_code, units, provider_submit_at,
           provider_done_at, message_fingerprint
      FROM dlr.day_report_rows WHERE report_date = %(report_date)s
    UNION ALL
    SELECT 'txn_report', 2, msg_id, transaction_id, mobile, sender_name, status, dlr.clean_status_word(status),
           cause, NULL, NULL, provider_submit_at, provider_done_at, NULL::bytea
      FROM dlr.txn_report_rows WHERE report_date = %(report_date)s
    UNION ALL
    SELECT 'getdlr', 3, msg_id, transaction_id, mobile, sender_name, status, dlr.clean_status_word(status),
           cause, error_code, NULL, provider_submit_at, provider_done_at, message_fingerprint
      FROM dlr.getdlr_rows WHERE report_date = %(report_date)s
    UNION ALL
    SELECT 'push', 4, p.provider_message_id, p.provider_txn_id, p.recipient, NULL,
           w.status, dlr.clean_status_word(w.status), c.description, p.error_code,
           NULL, p.provider_submit_at, p.provider_done_at, NULL::bytea
      FROM dlr.receipt_push_inbox p
      LEFT JOIN dlr.delivery_codes c ON c.error_code = p.error_code
     CROSS JOIN LATERAL (SELECT COALESCE(c.status_word, 'CODE_' || p.error_code) AS status) w
     WHERE p.reconciled_at IS NULL
       AND p.report_date = ANY(%(push_days)s::date[])
)
SELECT r.source, r.source_rank,
       CASE WHEN msg.is_clean_provider_id(btrim(r.msg_id)) THEN btrim(r.msg_id) END AS msg_id,
       CASE WHEN msg.is_clean_provider_id(btrim(r.transaction_id)) THEN btrim(r.transaction_id) END AS txn_id,
       NULLIF(ltrim(btrim(r.mobile), '+'), '') AS recipient,
       NULLIF(btrim(r.sender_name), '') AS sender_name,
       COALESCE(r.status, '') AS raw_status,
       COALESCE(a.status_word, r.cleaned_status) AS status_word,
       COALESCE(o.outcome, 'unmapped') AS outcome,
       NULLIF(btrim(r.cause), '') AS cause,
       NULLIF(btrim(r.error_code), '') AS error_code,
       CASE WHEN btrim(r.units) ~ '^[0-9]{1,4}$' THEN btrim(r.units)::smallint END AS units,
       r.provider_submit_at,
       r.provider_done_at,
       r.message_fingerprint
  FROM raw r
  LEFT JOIN dlr.status_aliases a ON a.alias = r.cleaned_status
  LEFT JOIN dlr.status_outcomes o ON o.status_word = COALESCE(a.status_word, r.cleaned_status)
