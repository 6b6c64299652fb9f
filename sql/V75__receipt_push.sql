-- The provider's delivery-receipt push (docs/provider-contract.md#dlr-push-webhook,
-- docs/design.md#receipt-push).
--
-- The receiver writes each push here and answers 2xx only after the commit:
-- the inbox is the durable copy of what the provider handed over, nothing
-- more. A push has no status word and no message text; its outcome is an
-- error code, turned into a report word at reconciliation through the
-- provider's code table (dlr.delivery_codes), so the inbox keeps the code as
-- it came. The provider delivers at least once: the key (msgId, error code)
-- makes a repeat a no-op (ON CONFLICT DO NOTHING), and a different code for
-- the same msgId is a new push, kept.
CREATE TABLE dlr.receipt_push_inbox (
    provider_message_id TEXT        NOT NULL,
    error_code          TEXT        NOT NULL,
    provider_txn_id     TEXT,                   -- NULL for OTP (the provider sends "0" or nothing)
    recipient           TEXT        NOT NULL,   -- normalised by core.msisdn
    provider_submit_at  TIMESTAMPTZ NOT NULL,   -- the push's received time: when the provider took the message
    provider_done_at    TIMESTAMPTZ,            -- the push's delivered time; stamped on failures too
    report_date         DATE        NOT NULL,   -- the provider-local day of provider_submit_at
    received_at         TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    reconciled_at       TIMESTAMPTZ,            -- set once, by the reconciliation that stored its receipt event
    PRIMARY KEY (provider_message_id, error_code),
    CONSTRAINT receipt_push_inbox_provider_message_id_clean CHECK (msg.is_clean_provider_id(provider_message_id)),
    CONSTRAINT receipt_push_inbox_provider_txn_id_clean CHECK (msg.is_clean_provider_id(provider_txn_id)),
    CONSTRAINT receipt_push_inbox_error_code_check CHECK (error_code ~ '^[0-9A-Za-z]{1,16}$'),
    CONSTRAINT receipt_push_inbox_recipient_check CHECK (recipient ~ '^[0-9]{8,15}$'),
    CONSTRAINT receipt_push_inbox_done_check CHECK (provider_done_at IS NULL OR provider_done_at >= provider_submit_at)
);

COMMENT ON TABLE dlr.receipt_push_inbox IS
    'Receipt pushes as received (key msgId + error code), before reconciliation; reconciled rows are purged '
    'by dlr.purge_receipt_push_inbox.';

-- What the next reconciliation reads, by provider day.
CREATE INDEX receipt_push_inbox_waiting_idx ON dlr.receipt_push_inbox (report_date) WHERE reconciled_at IS NULL;
-- What the purge removes.
CREATE INDEX receipt_push_inbox_reconciled_idx ON dlr.receipt_push_inbox (reconciled_at)
    WHERE reconciled_at IS NOT NULL;

-- Pushes the receiver refused (4xx): kept for a person to see, with every
-- value redacted (numbers masked, ids shortened), never reconciled.
CREATE TABLE dlr.receipt_push_rejects (
    reject_id   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    received_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    reason      TEXT        NOT NULL,
    fields      JSONB       NOT NULL,           -- parameter name -> redacted value
    CONSTRAINT receipt_push_rejects_reason_check CHECK (reason <> ''),
    CONSTRAINT receipt_push_rejects_fields_check CHECK (jsonb_typeof(fields) = 'object')
);

CREATE INDEX receipt_push_rejects_received_at_idx ON dlr.receipt_push_rejects (received_at);

-- The provider's error-code table (/info/deliverycodes), as last fetched:
-- the word its reports show for each code, raw (normalised at
-- reconciliation like any report word). A code missing here is unmapped.
CREATE TABLE dlr.delivery_codes (
    error_code   TEXT        PRIMARY KEY,
    status_word  TEXT        NOT NULL,
    description  TEXT,
    refreshed_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT delivery_codes_error_code_check CHECK (error_code ~ '^[0-9A-Za-z]{1,16}$'),
    CONSTRAINT delivery_codes_status_word_check CHECK (btrim(status_word) <> '')
);

-- A pushed receipt is a receipt event like any other, from one more source.
ALTER TABLE dlr.delivery_receipts DROP CONSTRAINT delivery_receipts_source_check;
ALTER TABLE dlr.delivery_receipts ADD CONSTRAINT delivery_receipts_source_check
    CHECK (source IN ('day_report', 'txn_report', 'getdlr', 'push'));
ALTER TABLE dlr.orphaned_receipts DROP CONSTRAINT orphaned_receipts_source_check;
ALTER TABLE dlr.orphaned_receipts ADD CONSTRAINT orphaned_receipts_source_check
    CHECK (source IN ('day_report', 'txn_report', 'getdlr', 'push'));
