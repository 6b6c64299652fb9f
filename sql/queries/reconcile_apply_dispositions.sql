-- What every matched event did to its message: applied (the final that
-- settled the row), ignored_intermediate, ignored_unmapped,
-- duplicate_final (agrees with the settled outcome) or conflicting_final
-- (disagrees: flagged, never applied).
-- Creates the work table reconcile_work.reconcile_event_dispositions.
CREATE UNLOGGED TABLE reconcile_work.reconcile_event_dispositions AS
SELECT e.receipt_id, e.submit_month, e.message_id, e.message_created_at, e.stored,
       CASE WHEN e.outcome = 'intermediate' THEN 'ignored_intermediate'
            WHEN e.outcome = 'unmapped' THEN 'ignored_unmapped'
            WHEN d.applies AND e.receipt_id = d.final_receipt_id AND e.submit_month = d.final_submit_month
                THEN 'applied'
            WHEN e.outcome = d.settled_outcome THEN 'duplicate_final'
            ELSE 'conflicting_final' END AS disposition
  FROM reconcile_work.reconcile_events e
  JOIN reconcile_work.reconcile_message_decisions d
    ON d.message_id = e.message_id AND d.message_created_at = e.message_created_at
