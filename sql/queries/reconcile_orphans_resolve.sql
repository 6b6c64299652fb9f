-- Earlier orphans whose receipt event has now been matched to a message:
-- resolved, pointing at the event they became.
-- every_waiting: false in a pass over new pushes: only the orphans of the
-- msgIds it tried (reconcile_work.reconcile_uncorrelated; see reconcile_correlate_uncorrelated).
-- Parameters: now, every_waiting (boolean). Returns how many orphans were resolved.
WITH resolved AS (
    UPDATE dlr.orphaned_receipts o
       SET resolved_at = %(now)s::timestamptz,
           resolved_receipt_id = r.receipt_id,
           resolved_receipt_submit_month = r.submit_month
      FROM dlr.delivery_receipts r
     WHERE o.resolved_at IS NULL
       AND r.provider_message_id = o.provider_message_id
       AND r.status_word = o.status_word
       AND r.message_id IS NOT NULL
       AND (%(every_waiting)s OR o.provider_message_id IN (SELECT msg_id FROM reconcile_work.reconcile_uncorrelated))
    RETURNING 1
)
SELECT count(*) FROM resolved
