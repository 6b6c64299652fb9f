-- The receiver stores one receipt push (sms_pipeline/receiver/app.py), committed before
-- its 2xx. A repeat of (msgId, error code) is a no-op: the row count says which (1 new, 0 repeat).
-- Parameters: provider_message_id, error_code, provider_txn_id (NULL for an OTP), recipient
-- (E.164 digits; an erased msgId's push stores its marker instead, dlr.erased_marker:
-- docs/design.md#redaction-and-erasure), provider_submit_at (the push's received time), provider_done_at (its
-- delivered time, NULL when none), report_date (the provider-local day of provider_submit_at).
INSERT INTO dlr.receipt_push_inbox (provider_message_id, error_code, provider_txn_id, recipient,
                                    provider_submit_at, provider_done_at, report_date)
VALUES (%(provider_message_id)s, %(error_code)s, %(provider_txn_id)s,
        COALESCE(dlr.erased_marker(%(provider_message_id)s), %(recipient)s),
        %(provider_submit_at)s, %(provider_done_at)s, %(report_date)s)
ON CONFLICT (provider_message_id, error_code) DO NOTHING
