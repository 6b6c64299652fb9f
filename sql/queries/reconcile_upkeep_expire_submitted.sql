-- `submitted` rows whose validity passed without a final receipt become
-- `expired` (state_reason 'no_final_receipt'); their cost stays (billed at
-- submission). A final receipt arriving later is kept as a conflicting
-- final, never applied. Uses outbound_message_open_idx. An adopted row
-- (adopted_from, V83) was past its validity before it was adopted: it waits
-- until the reports of its provider day and of the next one (which may hold
-- its line, docs/receipt-cases.md#case-20) have been reconciled
-- (reconciled_at >= loaded_at, V82), so they settle it first (docs/adoption.md).
-- Parameters: submitted_before (now minus validity), now, provider_timezone.
-- Returns how many rows moved.
WITH moved AS (
    UPDATE msg.outbound_message
       SET state = 'expired',
           state_reason = 'no_final_receipt',
           updated_at = %(now)s::timestamptz
     WHERE queue_state = 'submitted'  -- = state; the partial indexes read queue_state (V73)
       AND msg.attempt_at(submitted_at, claimed_at, scheduled_for) < %(submitted_before)s::timestamptz
       AND (adopted_from IS NULL
            OR (SELECT count(*) FROM dlr.report_checkpoints c
                 WHERE c.report_kind = 'day'
                   AND c.report_date BETWEEN (msg.attempt_at(submitted_at, claimed_at, scheduled_for)
                                              AT TIME ZONE %(provider_timezone)s)::date
                                         AND (msg.attempt_at(submitted_at, claimed_at, scheduled_for)
                                              AT TIME ZONE %(provider_timezone)s)::date + 1
                   AND c.reconciled_at >= c.loaded_at) = 2)
    RETURNING 1
)
SELECT count(*) FROM moved
