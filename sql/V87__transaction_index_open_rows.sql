-- The transaction index without closed rows (docs/design.md#access-patterns).
--
-- Its readers look only among rows still awaiting evidence or held by the
-- provider: the second correlation pass among `submitted` and `unknown` rows
-- (reconcile_correlate_by_transaction.sql), a provider-side campaign's
-- cancel and move among `scheduled` ones (campaign_cancel_transaction.sql,
-- campaign_reschedule_transaction.sql). Until now every row with a
-- transaction id had an entry, so the day's reconciliation, which closes
-- most of a day's rows in one UPDATE, wrote an entry for each closed version
-- that no query reads. The predicate makes no update lose HOT: the
-- queue's partial indexes read queue_state already.
--
-- Dropped before it is built again, as V73 and V80 do: building first and
-- dropping after would take the DROP's ACCESS EXCLUSIVE lock on top of the
-- build's SHARE lock, and deadlock with a worker that read the table before
-- its write queued. The lock is held through the build: workers and intake
-- wait. Upgrade in a quiet hour.
DROP INDEX msg.outbound_message_txn_idx;

CREATE INDEX outbound_message_txn_idx
    ON msg.outbound_message (provider_txn_id, recipient)
    WHERE provider_txn_id IS NOT NULL AND queue_state IN ('submitted', 'unknown', 'scheduled');
