-- Adoption of a legacy sends table (docs/adoption.md, `sms-pipeline adopt`).
--
-- adopted_from: '<legacy table>:<legacy id>' on every row the adoption wrote,
-- NULL on every other; set at insert and never changed (the update guard,
-- R__outbound_message_guards.sql), so it outlives any state move. It keeps
-- adopted rows out of the automatic re-send and out of the validity sweep
-- until their day is reconciled. A nullable column without a default is a
-- catalogue change only: no partition is rewritten.
ALTER TABLE msg.outbound_message
    ADD COLUMN adopted_from TEXT CONSTRAINT outbound_message_adopted_from_check CHECK (adopted_from <> '');

-- What a legacy row that gave no usable transaction id had stored, verbatim:
-- evidence for a person, never read to correlate. One row per legacy row
-- (its recipients' outbound rows carry the same adopted_from).
CREATE TABLE msg.adoption_evidence (
    tenant_id       TEXT        NOT NULL,
    adopted_from    TEXT        NOT NULL,
    problem         TEXT        NOT NULL,   -- responses.Problem: why no usable id
    response        TEXT,                   -- the legacy column's value, verbatim
    recorded_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, adopted_from),
    CONSTRAINT adoption_evidence_problem_check CHECK (problem <> '')
);

-- How far a backfill of one legacy table for one tenant got: the last legacy
-- id whose batch committed, for the `--since` it ran with (another --since
-- starts over; the adoption is idempotent either way).
CREATE TABLE msg.adoption_checkpoint (
    tenant_id       TEXT        NOT NULL,
    legacy_table    TEXT        NOT NULL,
    since           DATE,
    last_legacy_id  BIGINT      NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, legacy_table)
);
