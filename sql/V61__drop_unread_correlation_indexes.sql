-- Two indexes no statement reads, each paid for on every write of a day's
-- reconciliation (issue 9; readers checked in sql/queries, sms_pipeline,
-- dbt_project):
--
-- * dlr.delivery_receipts_txn_idx (provider_txn_id, recipient): pass 2 of
--   the correlation joins reconcile_uncorrelated with the message table,
--   never receipts by transaction. It took an entry when a receipt was
--   inserted and again when the reconciliation linked it (that update is
--   not HOT: message_id is indexed).
-- * msg.outbound_message_provider_message_id_idx: lookups by msgId go
--   through msg.provider_message_id_registry (global, one row per msgId);
--   the correlation only asks for rows WITHOUT a msgId, which this partial
--   index cannot answer. It took an entry on every matched message's update.

DROP INDEX dlr.delivery_receipts_txn_idx;
DROP INDEX msg.outbound_message_provider_message_id_idx;
