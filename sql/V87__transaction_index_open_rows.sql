-- The transaction index holds open rows only (docs/design.md#access-patterns).
--
-- Its one reader is the second correlation pass, which looks a receipt's
-- transaction + recipient up among rows still awaiting evidence (`submitted`
-- or `unknown`). Until now every row with a transaction id had an entry, so
-- the day's reconciliation, which closes most of a day's rows in one UPDATE,
-- wrote a new entry for each closed version that no query will ever read
-- (the update cannot be HOT: closing a row changes queue_state, which the
-- queue's partial indexes read).
--
-- The predicate is on queue_state, not on the msgId: an update that leaves a
-- row open keeps its entry and changes no indexed value here, so it stays
-- HOT-eligible as far as this index goes. Campaign rows (`scheduled`) are
-- found through their own indexes (V79), not this one.
--
-- Rebuilding an index on the partitioned table locks writes to it for the
-- length of the build: upgrade in a quiet hour.
DROP INDEX msg.outbound_message_txn_idx;

CREATE INDEX outbound_message_txn_idx
    ON msg.outbound_message (provider_txn_id, recipient)
    WHERE provider_txn_id IS NOT NULL AND queue_state IN ('submitted', 'unknown');
