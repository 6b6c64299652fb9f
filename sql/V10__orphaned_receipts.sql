-- Receipts that no correlation pass could match (seed 003, corrected): kept
-- with their raw payload, retried on every run, and linked to the receipt
-- event they became once a match appears. One orphan per event key, so a
-- re-run does not duplicate them. Retention: resolved ones go after 30 days
-- (dlr.purge_resolved_orphans); unresolved ones stay until a person acts.

CREATE TABLE dlr.orphaned_receipts (
    orphan_id                       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider_message_id             TEXT        NOT NULL,
    status_word                     TEXT        NOT NULL,
    raw_status                      TEXT        NOT NULL,
    source                          TEXT,
    raw_payload                     JSONB       NOT NULL,
    received_at                     TIMESTAMPTZ NOT NULL,
    resolved_at                     TIMESTAMPTZ,
    resolved_receipt_id             BIGINT,
    resolved_receipt_submit_month   DATE,
    created_at                      TIMESTAMPTZ NOT NULL DEFAULT now(),

    CONSTRAINT orphaned_receipts_event_key UNIQUE (provider_message_id, status_word),
    CONSTRAINT orphaned_receipts_provider_message_id_clean CHECK (msg.is_clean_provider_id(provider_message_id)),
    CONSTRAINT orphaned_receipts_status_word_check
        CHECK (status_word <> '' AND status_word = upper(status_word) AND status_word !~ '\s'),
    CONSTRAINT orphaned_receipts_source_check CHECK (source IN ('day_report', 'txn_report', 'getdlr')),
    CONSTRAINT orphaned_receipts_payload_check CHECK (jsonb_typeof(raw_payload) = 'object'),
    -- the receipt reference carries its partition column, both or neither,
    -- and only a resolved orphan has one
    CONSTRAINT orphaned_receipts_receipt_ref_check
        CHECK ((resolved_receipt_id IS NULL) = (resolved_receipt_submit_month IS NULL)),
    CONSTRAINT orphaned_receipts_resolved_check
        CHECK (resolved_receipt_id IS NULL OR resolved_at IS NOT NULL)
);

CREATE INDEX orphaned_receipts_unresolved_idx
    ON dlr.orphaned_receipts (received_at)
    WHERE resolved_at IS NULL;
CREATE INDEX orphaned_receipts_resolved_at_idx
    ON dlr.orphaned_receipts (resolved_at)
    WHERE resolved_at IS NOT NULL;

-- Delete orphans resolved before p_before; unresolved ones are never purged.
CREATE FUNCTION dlr.purge_resolved_orphans(p_before timestamptz) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    purged bigint;
BEGIN
    DELETE FROM dlr.orphaned_receipts WHERE resolved_at < p_before;
    GET DIAGNOSTICS purged = ROW_COUNT;
    RETURN purged;
END;
$$;
