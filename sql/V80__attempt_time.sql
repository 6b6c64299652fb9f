-- A row's attempt time, defined once (docs/design.md#access-patterns).
--
-- Until now every query wrote it as COALESCE(submitted_at, claimed_at) (the
-- marts: ..., created_at). A provider-side campaign row is claimed when it is
-- handed over (Monday) but the provider sends it at scheduled_for (Friday):
-- its day is Friday. Counted from the claim, its proof of non-submission read
-- the hand-over day's report, reconstruction looked for its report line around
-- the hand-over, and the marts put it on the hand-over day while `scheduled`.
-- A handed-over row is the one claimed before it was due (scheduled_for >
-- claimed_at); an ordinary or local row is claimed only once due. Once sent,
-- submitted_at = scheduled_for, so the rule changes nothing for it.
--
-- IMMUTABLE and PARALLEL SAFE, a plain SQL expression, not STRICT: the planner
-- inlines it, in queries and in index expressions alike, so a query written
-- with it matches the indexes built on it. NULL while never claimed (the marts
-- fall back to created_at).
--
-- Versioned, not repeatable (R__): the indexes below depend on the function,
-- and a repeatable migration's CREATE OR REPLACE would change what they hold
-- without rebuilding them. A new definition needs a new versioned migration
-- that rebuilds them.
CREATE FUNCTION msg.attempt_at(submitted_at timestamptz, claimed_at timestamptz, scheduled_for timestamptz)
    RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT COALESCE(submitted_at, CASE WHEN scheduled_for > claimed_at THEN scheduled_for ELSE claimed_at END)
$$;

-- The indexes whose expression is the attempt time, rebuilt on the function
-- with the same names and predicates (as V73 rebuilt them: on the partitioned
-- parent, which rebuilds each partition's). Rewrites those indexes once:
-- upgrade in a quiet hour.
DROP INDEX msg.outbound_message_open_idx;
DROP INDEX msg.outbound_message_correlate_idx;
DROP INDEX msg.outbound_message_attempt_at_idx;

-- Rows awaiting evidence, by state and attempt time (V6, V73).
CREATE INDEX outbound_message_open_idx
    ON msg.outbound_message (queue_state, (msg.attempt_at(submitted_at, claimed_at, scheduled_for)))
    WHERE queue_state IN ('submitted', 'unknown');

-- Correlation by reconstruction: recipient + sender + attempt time (V6, V73).
CREATE INDEX outbound_message_correlate_idx
    ON msg.outbound_message (recipient, sender_id, (msg.attempt_at(submitted_at, claimed_at, scheduled_for)))
    WHERE provider_txn_id IS NULL AND queue_state IN ('submitted', 'unknown');

-- The marts' day (V50): the attempt time, else created_at for a row never claimed.
CREATE INDEX outbound_message_attempt_at_idx
    ON msg.outbound_message ((COALESCE(msg.attempt_at(submitted_at, claimed_at, scheduled_for), created_at)));
