-- What the dbt marts need from the database (dbt_project/, issue 10):
--   * schema `transform` for dbt's staging and intermediate views (the marts
--     themselves land in `marts`, V1);
--   * the provider's own day summary (/report/summary, groupby=senderid),
--     for the tie-out of our billable units against what the provider billed;
--   * indexes that let a day window find its rows without reading history;
--   * the read-only role `marts_reader`: USAGE on `marts` only (SELECT on each
--     mart comes from dbt's `grants:`, re-applied on every full refresh).

CREATE SCHEMA IF NOT EXISTS transform;

-- One row per provider-local day whose summary was fetched. A fetched day
-- with no traffic has no sender rows, which is different from "not fetched".
CREATE TABLE dlr.provider_summary_fetch (
    day             DATE        PRIMARY KEY,
    fetched_at      TIMESTAMPTZ NOT NULL,
    sender_rows     INTEGER     NOT NULL,
    CONSTRAINT provider_summary_fetch_sender_rows_check CHECK (sender_rows >= 0)
);

-- The provider's figures per day and sender id (the client parsed its
-- strings into integers). A row the provider sent without a sender id is kept
-- under '' (the primary key cannot hold a null); staging turns it back into null.
CREATE TABLE dlr.provider_summary (
    day             DATE        NOT NULL REFERENCES dlr.provider_summary_fetch (day) ON DELETE CASCADE,
    sender_id       TEXT        NOT NULL,
    total_messages  BIGINT      NOT NULL,
    delivered       BIGINT      NOT NULL,
    failed          BIGINT      NOT NULL,
    pending         BIGINT      NOT NULL,
    units           BIGINT      NOT NULL,
    PRIMARY KEY (day, sender_id),
    CONSTRAINT provider_summary_counts_check
        CHECK (units >= 0 AND total_messages >= 0 AND delivered >= 0 AND failed >= 0 AND pending >= 0)
);

-- A message's day is the provider-local date of its send attempt:
-- submitted_at, else claimed_at, else created_at (design.md "Time"). The
-- incremental marts filter on exactly this expression, so a day's window is
-- an index range scan in each month partition however long the history.
CREATE INDEX outbound_message_attempt_at_idx
    ON msg.outbound_message ((COALESCE(submitted_at, claimed_at, created_at)));

-- Receipts count on the day of their provider submit time; orphans on the day
-- they reached us (reconciliation_daily).
CREATE INDEX delivery_receipts_provider_submit_at_idx
    ON dlr.delivery_receipts (provider_submit_at);
CREATE INDEX orphaned_receipts_received_at_idx
    ON dlr.orphaned_receipts (received_at);

-- Roles are per server, databases are not: create it once, tolerate a
-- concurrent migration of another database creating it at the same moment.
-- LOGIN without a password: it authenticates however the server's pg_hba
-- says (trust on the embedded server's socket; set a password elsewhere).
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'marts_reader') THEN
        CREATE ROLE marts_reader LOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;

GRANT USAGE ON SCHEMA marts TO marts_reader;
