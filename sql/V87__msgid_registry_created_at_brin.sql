-- The msgId registry's second index becomes a BRIN (issue 24;
-- docs/design.md "Outbound messages", uniqueness across partitions).
--
-- Its one reader is retention, which deletes a dropped month's entries by a
-- range of message_created_at (msg.drop_message_partitions_before). A range
-- is what a BRIN answers, and the registry keeps its entries in about that
-- order on disk: the reconciliation registers a day's msgIds in one
-- statement, day after day, so a block range holds messages of a day or
-- two. The btree took an entry per msgId in the update's row order, not in
-- time order: a random leaf page each, about 0.9 s of the registry trigger's
-- 5.2 s for a day of a million messages (lab, bench/RESULTS.md). A BRIN
-- takes nothing per row until VACUUM summarises the new pages. Until then
-- those ranges always match, and retention reads them too (they hold the
-- newest entries, which a month being dropped rarely has).
--
-- Rebuilds the index once (a short lock on the registry): upgrade in a
-- quiet hour.
DROP INDEX msg.provider_message_id_registry_message_created_at_idx;
CREATE INDEX provider_message_id_registry_message_created_at_idx
    ON msg.provider_message_id_registry USING brin (message_created_at);
