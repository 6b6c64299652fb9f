-- Receipt events (seed 003, corrected by design.md): one row per
-- (provider msgId, normalised SMPP status word). A replay of the same status
-- is a no-op whatever its source or time precision; a new status is a new
-- event, so an early ACCEPTD can never hide the final DELIVRD.
--
-- Partitioned by the month (UTC) of the provider's submit time, which is the
-- same for every receipt of one message: retention drops whole months. The
-- partition key must be part of every unique key, and the submit time itself
-- differs in precision between sources (ms epoch vs seconds), so the key is
-- the explicit column submit_month = dlr.submit_month(provider_submit_at),
-- checked against the submit time. Partitions: dlr.receipts_YYYY_MM.

CREATE FUNCTION dlr.submit_month(p_submit_at timestamptz) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN date_trunc('month', p_submit_at AT TIME ZONE 'UTC')::date;

CREATE TABLE dlr.delivery_receipts (
    receipt_id          BIGINT GENERATED ALWAYS AS IDENTITY,
    provider_message_id TEXT        NOT NULL,
    status_word         TEXT        NOT NULL,   -- canonical SMPP word (core.statuses)
    raw_status          TEXT        NOT NULL,   -- as received
    outcome             TEXT        NOT NULL,
    provider_txn_id     TEXT,
    recipient           TEXT,
    sender_name         TEXT,
    cause               TEXT,
    error_code          TEXT,
    units               SMALLINT,
    provider_submit_at  TIMESTAMPTZ NOT NULL,
    submit_month        DATE        NOT NULL,   -- partition key, = dlr.submit_month(provider_submit_at)
    provider_done_at    TIMESTAMPTZ,
    source              TEXT        NOT NULL,
    first_seen_at       TIMESTAMPTZ NOT NULL,

    -- correlation: the message this event belongs to, once found
    message_id          BIGINT,
    message_created_at  TIMESTAMPTZ,
    correlation_result  msg.correlation_result,
    correlated_at       TIMESTAMPTZ,
    -- what the event did to its message; NULL until decided:
    --   applied              the final status that moved the message
    --   ignored_intermediate an intermediate status (never moves a state)
    --   ignored_unmapped     a word outside the table (kept, counted)
    --   duplicate_final      another final agreeing with the applied outcome
    --   conflicting_final    a later final that disagrees (flagged, not applied)
    disposition         TEXT,

    PRIMARY KEY (receipt_id, submit_month),
    CONSTRAINT delivery_receipts_event_key UNIQUE (provider_message_id, status_word, submit_month),

    CONSTRAINT delivery_receipts_provider_message_id_clean CHECK (msg.is_clean_provider_id(provider_message_id)),
    CONSTRAINT delivery_receipts_provider_txn_id_clean CHECK (msg.is_clean_provider_id(provider_txn_id)),
    CONSTRAINT delivery_receipts_status_word_check
        CHECK (status_word <> '' AND status_word = upper(status_word) AND status_word !~ '\s'),
    CONSTRAINT delivery_receipts_outcome_check
        CHECK (outcome IN ('delivered', 'failed', 'expired', 'intermediate', 'unmapped')),
    CONSTRAINT delivery_receipts_source_check CHECK (source IN ('day_report', 'txn_report', 'getdlr')),
    CONSTRAINT delivery_receipts_submit_month_check
        CHECK (submit_month = dlr.submit_month(provider_submit_at)),
    CONSTRAINT delivery_receipts_units_check CHECK (units >= 0),
    CONSTRAINT delivery_receipts_message_check
        CHECK ((message_id IS NULL) = (message_created_at IS NULL)),
    CONSTRAINT delivery_receipts_matched_check
        CHECK (message_id IS NULL OR correlation_result = 'matched'),
    CONSTRAINT delivery_receipts_disposition_check
        CHECK (disposition IN ('applied', 'ignored_intermediate', 'ignored_unmapped',
                               'duplicate_final', 'conflicting_final')),
    CONSTRAINT delivery_receipts_disposition_needs_message_check
        CHECK (disposition IS NULL OR message_id IS NOT NULL)
) PARTITION BY RANGE (submit_month);

COMMENT ON TABLE dlr.delivery_receipts IS
    'One row per receipt event (provider msgId, SMPP status word). Insert through the parent with '
    'submit_month = dlr.submit_month(provider_submit_at); partitions dlr.receipts_YYYY_MM from dlr.ensure_partitions.';

-- Receipts of a message (marts, conflict checks).
CREATE INDEX delivery_receipts_message_idx
    ON dlr.delivery_receipts (message_id, message_created_at)
    WHERE message_id IS NOT NULL;
-- Receipts still waiting for correlation.
CREATE INDEX delivery_receipts_uncorrelated_idx
    ON dlr.delivery_receipts (first_seen_at)
    WHERE message_id IS NULL;
-- Second correlation pass (transaction + recipient).
CREATE INDEX delivery_receipts_txn_idx
    ON dlr.delivery_receipts (provider_txn_id, recipient)
    WHERE provider_txn_id IS NOT NULL;
-- Freshness (seconds since the last receipt) and incremental marts.
CREATE INDEX delivery_receipts_first_seen_at_idx ON dlr.delivery_receipts (first_seen_at);


-- Monthly receipt partitions from p_from's month (UTC) through
-- p_months_ahead months later; returns how many were created. The ingest
-- calls it with the day it loads (backfills reach past months).
CREATE FUNCTION dlr.ensure_partitions(p_from timestamptz, p_months_ahead int DEFAULT 2)
RETURNS int
LANGUAGE sql
AS $$
    SELECT msg.ensure_month_partitions('dlr.delivery_receipts', 'receipts', p_from, p_months_ahead)
$$;

-- Retention: drop every receipt partition whose month ends on or before
-- p_before; returns how many were dropped.
CREATE FUNCTION dlr.drop_receipt_partitions_before(p_before timestamptz) RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    part record;
    dropped int := 0;
BEGIN
    PERFORM pg_advisory_xact_lock('dlr.delivery_receipts'::regclass::oid::bigint);
    FOR part IN SELECT * FROM msg.month_partitions('dlr.delivery_receipts', 'receipts') LOOP
        CONTINUE WHEN (part.month + interval '1 month')::timestamp AT TIME ZONE 'UTC' > p_before;
        EXECUTE format('ALTER TABLE dlr.delivery_receipts DETACH PARTITION %s', part.partition);
        EXECUTE format('DROP TABLE %s', part.partition);
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END;
$$;

SELECT dlr.ensure_partitions(now());
