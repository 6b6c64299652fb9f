-- The `sending` step as a HOT update (docs/design.md#the-sending-step-on-the-page).
--
-- Just before a request goes out its rows move `claimed -> sending` in a
-- committed statement of their own. Postgres can make that update HOT (the
-- new row version on the same page, no new index entries) only when no
-- index reads a column whose value changes, predicates included. Every
-- partial index of the queue read `state`, so each row paid a full new
-- version in every index for that step (a third of the send path's cost).
--
-- `queue_state` is the state as the indexes see it: `sending` reads as
-- `claimed` (both hold a lease), every other state as itself. The indexes
-- move from `state` to it, so `claimed -> sending` changes no indexed value.
-- The two lease indexes (claimed, sending) become one: the lease queries
-- tell the two states apart on the few rows in it.
--
-- Adding a stored column rewrites every partition once (an ACCESS EXCLUSIVE
-- lock for the length of the rewrite): upgrade in a quiet hour.
ALTER TABLE msg.outbound_message
    ADD COLUMN queue_state msg.message_state
        GENERATED ALWAYS AS (CASE WHEN state = 'sending' THEN 'claimed'::msg.message_state ELSE state END) STORED;

DROP INDEX msg.outbound_message_claim_idx;
DROP INDEX msg.outbound_message_stuck_claims_idx;
DROP INDEX msg.outbound_message_stuck_sending_idx;
DROP INDEX msg.outbound_message_open_idx;
DROP INDEX msg.outbound_message_correlate_idx;
DROP INDEX msg.outbound_message_pending_expiry_idx;

-- The same access patterns as V6/V40/V71, on queue_state.
CREATE INDEX outbound_message_claim_idx
    ON msg.outbound_message (channel, message_class, (COALESCE(scheduled_for, created_at)))
    WHERE queue_state = 'pending';

-- Rows holding a lease (claimed or sending), by claim time (stuck_claims.sql, stuck_sending.sql).
CREATE INDEX outbound_message_lease_idx
    ON msg.outbound_message (claimed_at)
    WHERE queue_state = 'claimed';

CREATE INDEX outbound_message_open_idx
    ON msg.outbound_message (queue_state, (COALESCE(submitted_at, claimed_at)))
    WHERE queue_state IN ('submitted', 'unknown');

CREATE INDEX outbound_message_correlate_idx
    ON msg.outbound_message (recipient, sender_id, (COALESCE(submitted_at, claimed_at)))
    WHERE provider_txn_id IS NULL AND queue_state IN ('submitted', 'unknown');

CREATE INDEX outbound_message_pending_expiry_idx
    ON msg.outbound_message (expires_at)
    WHERE queue_state = 'pending' AND expires_at IS NOT NULL;

-- Room on each page for the next versions of its rows: a row is written again
-- within seconds of its insert (the claim, then the sending step), and the
-- sending step is HOT only when its new version fits on the row's page. With
-- a third of each page filled at insert, the claim's version and the sending
-- step's both fit without waiting for the claim's dead version to be pruned
-- (which any older snapshot in the database would delay). Measured on 20,000
-- rows through claim, sending and answer: 1,538 pages against 2,036 at the
-- default fillfactor, whose every update appends to the end of the table.
-- New partitions get the same (msg.ensure_partitions).
DO $$
DECLARE
    part regclass;
BEGIN
    FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'msg.outbound_message'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (fillfactor = 33)', part);
    END LOOP;
END;
$$;

-- Partition functions take the partitions' fillfactor (sql/R__partitions.sql).
DROP FUNCTION msg.create_month_partition(regclass, text, date);
DROP FUNCTION msg.ensure_month_partitions(regclass, text, timestamptz, int);
