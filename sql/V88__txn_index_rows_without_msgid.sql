-- The (transaction id, recipient) index keeps only the rows without a msgId
-- (issue 24; docs/design.md "Access patterns").
--
-- Its one reader is the correlation's second pass
-- (reconcile_correlate_by_transaction.sql), which looks for a report line's
-- row among those that have the transaction id and no msgId yet; a row with
-- a msgId is found by the first pass, through the registry. The day's
-- message UPDATE writes a msgId onto nearly every row it matches, and
-- entered each new row version in this index all the same: about 1.3 s of a
-- million-message day (lab, bench/RESULTS.md). Now such a version takes no
-- entry. The worker's answer (transaction id, no msgId) still enters its row.
--
-- Rebuilds the index on every message partition once: upgrade in a quiet hour.
DROP INDEX msg.outbound_message_txn_idx;
CREATE INDEX outbound_message_txn_idx
    ON msg.outbound_message (provider_txn_id, recipient)
    WHERE provider_txn_id IS NOT NULL AND provider_message_id IS NULL;
