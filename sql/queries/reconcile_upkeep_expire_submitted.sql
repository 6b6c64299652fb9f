-- `submitted` rows whose validity passed without a final receipt become
-- `expired` (state_reason 'no_final_receipt'); their cost stays (billed at
-- submission). A final receipt arriving later is kept as a conflicting
-- final, never applied. Uses outbound_message_open_idx.
-- Parameters: submitted_before (now minus validity), now. Returns how many rows moved.
WITH moved AS (
    UPDATE msg.outbound_message
       SET state = 'expired',
           state_reason = 'no_final_receipt',
           updated_at = %(now)s::timestamptz
     WHERE queue_state = 'submitted'  -- = state; the partial indexes read queue_state (V73)
       AND msg.attempt_at(submitted_at, claimed_at, scheduled_for) < %(submitted_before)s::timestamptz
    RETURNING 1
)
SELECT count(*) FROM moved
