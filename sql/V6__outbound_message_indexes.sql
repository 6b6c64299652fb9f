-- The four hot query shapes of seed 000, one partial index each, plus two
-- lookups. The queries themselves are in sql/queries/ and use these exact
-- expressions (an expression index is used only for the same expression).
-- "Attempt time" is COALESCE(submitted_at, claimed_at): rows that went
-- `unknown` never got a submitted_at, but every claimed row has claimed_at.

-- 1. Claim the next due batch of one channel and class (claim_queue.sql).
--    Due time is scheduled_for when set, else created_at.
CREATE INDEX outbound_message_claim_idx
    ON msg.outbound_message (channel, message_class, (COALESCE(scheduled_for, created_at)))
    WHERE state = 'pending';

-- 2. Claims whose lease ran out (stuck_claims.sql).
CREATE INDEX outbound_message_stuck_claims_idx
    ON msg.outbound_message (claimed_at)
    WHERE state = 'claimed';

-- 3. Rows awaiting evidence, by state and attempt time
--    (reconciliation_candidates.sql; also the open-unknown count).
CREATE INDEX outbound_message_open_idx
    ON msg.outbound_message (state, (COALESCE(submitted_at, claimed_at)))
    WHERE state IN ('submitted', 'unknown');

-- 4. Correlation by reconstruction for rows without a transaction id
--    (correlation_candidates.sql): recipient + sender + attempt time.
CREATE INDEX outbound_message_correlate_idx
    ON msg.outbound_message (recipient, sender_id, (COALESCE(submitted_at, claimed_at)))
    WHERE provider_txn_id IS NULL AND state IN ('submitted', 'unknown');

-- Lookups: by transaction (+ recipient, the second correlation pass) and by
-- msgId within a partition (global uniqueness is the registry's job).
CREATE INDEX outbound_message_txn_idx
    ON msg.outbound_message (provider_txn_id, recipient)
    WHERE provider_txn_id IS NOT NULL;

CREATE INDEX outbound_message_provider_message_id_idx
    ON msg.outbound_message (provider_message_id)
    WHERE provider_message_id IS NOT NULL;
