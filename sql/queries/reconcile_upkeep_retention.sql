-- Retention (docs/design.md#retention): expired OTP verifications purged
-- (short-lived, and the sidecar must go before its message partition can
-- be dropped); receipt partitions whose month ended before the receipt
-- horizon dropped; raw report loads older than the same horizon dropped;
-- orphans resolved before the orphan horizon deleted (unresolved ones stay
-- until a person acts); receipt pushes reconciled before the inbox horizon
-- deleted (their events stay; an unreconciled push is never deleted);
-- refused pushes kept for a person deleted after the orphan horizon.
-- Message partitions: reconcile_upkeep_drop_messages.
-- Parameters: otp_expired_before, receipts_before, raw_reports_before (date),
-- orphans_resolved_before, pushes_reconciled_before. Returns one row of counts.
SELECT msg.purge_otp_verifications(%(otp_expired_before)s::timestamptz) AS otp_verifications_purged,
       dlr.drop_receipt_partitions_before(%(receipts_before)s::timestamptz) AS receipt_partitions_dropped,
       dlr.drop_day_report_partitions_before(%(raw_reports_before)s::date) AS day_report_partitions_dropped,
       dlr.purge_txn_reports_before(%(raw_reports_before)s::date) AS txn_reports_purged,
       dlr.purge_getdlr_rows_before(%(raw_reports_before)s::date) AS getdlr_rows_purged,
       dlr.purge_resolved_orphans(%(orphans_resolved_before)s::timestamptz) AS orphans_purged,
       dlr.purge_receipt_push_inbox(%(pushes_reconciled_before)s::timestamptz) AS push_inbox_purged,
       dlr.purge_receipt_push_rejects(%(orphans_resolved_before)s::timestamptz) AS push_rejects_purged
