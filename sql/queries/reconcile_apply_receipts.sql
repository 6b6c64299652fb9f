-- Link every matched event to its message and record what it did:
-- applied (the final that settled the row), ignored_intermediate,
-- ignored_unmapped, duplicate_final (agrees with the settled outcome) or
-- conflicting_final (disagrees: flagged, never applied). Only events not
-- linked yet, so a re-run changes nothing.
-- Parameters: now. Returns (disposition, events).
WITH linked AS (
    UPDATE dlr.delivery_receipts r
       SET message_id = e.message_id,
           message_created_at = e.message_created_at,
           correlation_result = 'matched',
           correlated_at = %(now)s::timestamptz,
           disposition = CASE
               WHEN e.outcome = 'intermediate' THEN 'ignored_intermediate'
               WHEN e.outcome = 'unmapped' THEN 'ignored_unmapped'
               WHEN d.applies AND e.receipt_id = d.final_receipt_id AND e.submit_month = d.final_submit_month
                   THEN 'applied'
               WHEN e.outcome = d.settled_outcome THEN 'duplicate_final'
               ELSE 'conflicting_final' END
      FROM reconcile_events e
      JOIN reconcile_message_decisions d
        ON d.message_id = e.message_id AND d.message_created_at = e.message_created_at
     WHERE r.receipt_id = e.receipt_id
       AND r.submit_month = e.submit_month
       AND r.message_id IS NULL
    RETURNING r.disposition
)
SELECT disposition, count(*) FROM linked GROUP BY 1
