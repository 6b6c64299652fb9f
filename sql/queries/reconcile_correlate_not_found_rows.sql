-- Rows awaiting evidence (`submitted` without a final, `unknown`) whose
-- attempt time lies in the reconciled day, that have no msgId and were no
-- candidate of any pass: `not_found`, with how far reconstruction looked for
-- a row only it could have found (no transaction id): the window, or for a
-- handed-over row (scheduled_for > claimed_at) the spread after its time (a
-- changed setting marks the row anew). The index expression of
-- outbound_message_open_idx selects the day.
-- Parameters: day_start, day_end, window_ms, spread_ms, now. Returns how many rows changed.
WITH changed AS (
    UPDATE msg.outbound_message m
       SET correlation_result = 'not_found',
           correlation_window_ms = CASE WHEN m.provider_txn_id IS NOT NULL THEN m.correlation_window_ms
                                        WHEN msg.handed_over(m.claimed_at, m.scheduled_for) THEN %(spread_ms)s
                                        ELSE %(window_ms)s END,
           reconciled_at = %(now)s::timestamptz,
           updated_at = %(now)s::timestamptz
     WHERE m.queue_state IN ('submitted', 'unknown')  -- = state; the partial indexes read queue_state (V73)
       AND msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for) >= %(day_start)s::timestamptz
       AND msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for) < %(day_end)s::timestamptz
       AND m.provider_message_id IS NULL
       AND NOT EXISTS (SELECT 1 FROM reconcile_work.reconcile_decisions p
                        WHERE p.message_id = m.id AND p.message_created_at = m.created_at)
       AND (m.correlation_result, m.correlation_window_ms)
           IS DISTINCT FROM ('not_found'::msg.correlation_result,
                             CASE WHEN m.provider_txn_id IS NOT NULL THEN m.correlation_window_ms
                                  WHEN msg.handed_over(m.claimed_at, m.scheduled_for) THEN %(spread_ms)s
                                  ELSE %(window_ms)s END)
    RETURNING 1
)
SELECT count(*) FROM changed
