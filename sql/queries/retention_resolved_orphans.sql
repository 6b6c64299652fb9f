-- Orphaned receipts the hourly upkeep deletes (resolved before
-- orphans_resolved_before: dlr.purge_resolved_orphans); read-only.
-- Parameters: orphans_resolved_before. Returns the count.
SELECT count(*) FROM dlr.orphaned_receipts WHERE resolved_at < %(orphans_resolved_before)s::timestamptz
