-- The transaction index without closed rows (docs/design.md#access-patterns).
--
-- Its readers look only among rows that can still change on a transaction's
-- evidence: the second correlation pass among rows awaiting it (`submitted`,
-- `unknown`; reconcile_correlate_by_transaction.sql), a provider-side
-- campaign's cancel and move among the rows the provider holds (`scheduled`;
-- campaign_cancel_transaction.sql, campaign_reschedule_transaction.sql).
-- Until now every row with a transaction id had an entry, so the day's
-- reconciliation, which closes most of a day's rows in one UPDATE, wrote an
-- entry for each closed version that no query reads. The predicate takes
-- HOT from no update: queue_state is read by the queue's partial indexes
-- already, so an update that changes it was never HOT.
--
-- Built before the old one is dropped: the build blocks writes to the table
-- and lets reads go on; the swap at its end blocks all access, briefly.
-- Upgrade in a quiet hour.
CREATE INDEX outbound_message_txn_open_idx
    ON msg.outbound_message (provider_txn_id, recipient)
    WHERE provider_txn_id IS NOT NULL AND queue_state IN ('submitted', 'unknown', 'scheduled');

DROP INDEX msg.outbound_message_txn_idx;

ALTER INDEX msg.outbound_message_txn_open_idx RENAME TO outbound_message_txn_idx;
