-- Raw loads of the two JSON report endpoints, beside the day-report load of
-- V11. They keep the fields as the provider client hands them over: ids as
-- text with placeholders ("0", "") already NULL, status words and causes as
-- received, times as UTC instants (the by-transaction report's human-readable
-- local times converted with the provider zone, getDlr's millisecond epochs
-- exactly). Report text that may hold an OTP code is kept only as its SHA-256.
--
-- A re-fetch replaces what an earlier fetch stored, and a fetch whose
-- content checksum equals the stored one writes nothing, so re-running a
-- partition updates zero rows.


-- By-transaction reports (/reports/status?uuid=...): one fetch row per
-- transaction id, holding the checksum of the answer its rows came from.
-- Rows are replaced as a whole per transaction (delete, insert, in one
-- transaction with the fetch row).
CREATE TABLE dlr.txn_report_fetches (
    transaction_id  TEXT        PRIMARY KEY,
    report_date     DATE        NOT NULL,   -- provider-local day the transaction was submitted on
    checksum        TEXT        NOT NULL,   -- SHA-256 of the answer's rows, canonical JSON
    rows            INTEGER     NOT NULL,   -- 0: "no report yet" (an empty list)
    fetched_at      TIMESTAMPTZ NOT NULL,
    CONSTRAINT txn_report_fetches_transaction_id_clean
        CHECK (msg.is_clean_provider_id(transaction_id)),
    CONSTRAINT txn_report_fetches_rows_check CHECK (rows >= 0),
    CONSTRAINT txn_report_fetches_checksum_check CHECK (checksum ~ '^[0-9a-f]{64}$')
);

CREATE INDEX txn_report_fetches_report_date_idx ON dlr.txn_report_fetches (report_date);

COMMENT ON TABLE dlr.txn_report_fetches IS
    'Last stored by-transaction report per transaction id; its rows are dlr.txn_report_rows.';

CREATE TABLE dlr.txn_report_rows (
    transaction_id      TEXT        NOT NULL REFERENCES dlr.txn_report_fetches ON DELETE CASCADE,
    row_no              INTEGER     NOT NULL,   -- position in the answer's list, from 1
    report_date         DATE        NOT NULL,   -- = the fetch's report_date
    msg_id              TEXT,
    mobile              TEXT,
    sender_name         TEXT,
    status              TEXT,                   -- status.Status as received (long form, e.g. DELIVERED)
    cause               TEXT,                   -- status.Cause
    provider_submit_at  TIMESTAMPTZ,
    provider_done_at    TIMESTAMPTZ,
    PRIMARY KEY (transaction_id, row_no),
    CONSTRAINT txn_report_rows_row_no_check CHECK (row_no > 0)
);

-- The reconciliation reads one window of days at a time.
CREATE INDEX txn_report_rows_report_date_idx ON dlr.txn_report_rows (report_date);

COMMENT ON TABLE dlr.txn_report_rows IS
    'Raw by-transaction report rows, replaced per transaction on a changed re-fetch.';

-- Retention: forget by-transaction reports of days before p_before; returns
-- how many transactions were dropped (their rows go by cascade).
CREATE FUNCTION dlr.purge_txn_reports_before(p_before date) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    purged bigint;
BEGIN
    DELETE FROM dlr.txn_report_fetches WHERE report_date < p_before;
    GET DIAGNOSTICS purged = ROW_COUNT;
    RETURN purged;
END;
$$;


-- Intraday delivery reports (/report/status method=getDlr, paged) for one
-- provider-local day: every recipient submitted that day with its status at
-- the time of the pull. Replaced as a whole per day; the pull's checksum is
-- the dlr.report_checkpoints row with report_kind 'getdlr'.
CREATE TABLE dlr.getdlr_rows (
    report_date         DATE        NOT NULL,   -- the provider-local day asked for
    row_no              INTEGER     NOT NULL,   -- position across the pages, from 1
    msg_id              TEXT,
    transaction_id      TEXT,                   -- uuId; NULL for OTP ("0" on the wire)
    mobile              TEXT,
    sender_name         TEXT,
    message_sha256      TEXT,                   -- of `text`; the text itself is never stored
    status              TEXT,
    cause               TEXT,
    error_code          TEXT,
    provider_submit_at  TIMESTAMPTZ,
    provider_done_at    TIMESTAMPTZ,            -- NULL: no final receipt yet
    PRIMARY KEY (report_date, row_no),
    CONSTRAINT getdlr_rows_row_no_check CHECK (row_no > 0),
    CONSTRAINT getdlr_rows_message_sha256_check CHECK (message_sha256 ~ '^[0-9a-f]{64}$')
);

COMMENT ON TABLE dlr.getdlr_rows IS
    'Raw getDlr rows of the last intraday pull per day; checksum in dlr.report_checkpoints (kind getdlr).';

-- Retention: drop intraday pulls of days before p_before (the day report is
-- the complete record once it is loaded); returns how many rows went.
CREATE FUNCTION dlr.purge_getdlr_rows_before(p_before date) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    purged bigint;
BEGIN
    DELETE FROM dlr.getdlr_rows WHERE report_date < p_before;
    GET DIAGNOSTICS purged = ROW_COUNT;
    DELETE FROM dlr.report_checkpoints WHERE report_kind = 'getdlr' AND report_date < p_before;
    RETURN purged;
END;
$$;
