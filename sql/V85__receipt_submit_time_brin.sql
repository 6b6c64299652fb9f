-- dlr.delivery_receipts keeps only indexes a query reads (issue 24; readers
-- checked in sql/queries, dbt_project, sms_pipeline; each reader's plan at
-- volume in tests/db/test_receipt_indexes.py, docs/design.md "Receipt indexes"):
--
--   delivery_receipts_pkey, delivery_receipts_event_key: the keys (a stored
--     event's identity; replays are dropped against the event key).
--   delivery_receipts_message_idx: a message's receipts (proof of
--     non-submission, `messages trace`, the final state of a superseded row).
--   delivery_receipts_uncorrelated_idx: the events still waiting for
--     correlation, tried again on every run (its predicate is what is read;
--     a day's insert enters only its unmatched events).
--   delivery_receipts_first_seen_at_idx stays a btree: the freshness checks'
--     max(first_seen_at) needs one, and the exporter's and the orphan rate's
--     last 24 hours would, through a BRIN, also read every page stored since
--     the partition's last VACUUM (unsummarised ranges always match). The
--     newest receipt_id is no substitute for the max: a run stores `now` from
--     the application clock, which can be frozen, so a later id may carry an
--     earlier time. Its entries are cheap: a run's events share one
--     first_seen_at, so they append to the rightmost leaf.
--
-- provider_submit_at becomes a BRIN: the marts' day windows (reconciliation,
-- tie-out) and a day's row count read ranges of it, and the reconciliation
-- stores a day's receipts together in their month's partition, so the submit
-- time follows the physical order there. The btree it replaces took a random
-- leaf page per event (the insert comes in msgId order): the largest index
-- share of a day's receipts INSERT.

DROP INDEX dlr.delivery_receipts_provider_submit_at_idx;
CREATE INDEX delivery_receipts_provider_submit_at_idx
    ON dlr.delivery_receipts USING brin (provider_submit_at);
