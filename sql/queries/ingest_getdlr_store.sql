-- Store the staged pull as the day's getDlr rows (after
-- ingest_getdlr_clear_day, in the same transaction).
-- Parameters: none.
INSERT INTO dlr.getdlr_rows (report_date, row_no, msg_id, transaction_id, mobile, sender_name, message_fingerprint,
                             status, cause, error_code, provider_submit_at, provider_done_at)
SELECT report_date, row_no, msg_id, transaction_id, mobile, sender_name, message_fingerprint,
       status, cause, error_code, provider_submit_at, provider_done_at
  FROM ingest_getdlr_stage
