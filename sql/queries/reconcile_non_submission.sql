-- Proof of non-submission (docs/design.md#proof-of-non-submission): `unknown` rows whose attempt time
-- (msg.attempt_at, V80; a row handed to the provider ahead of its time is
-- due, and would be sent, on its scheduled_for's day, whose report proves it)
-- lies in a provider day whose complete day report is loaded (the caller
-- checks completeness) and for which no pass found anything: no msgId, no
-- linked receipt, `not_found` (decided in the same transaction, after all
-- passes; `ambiguous` rows are not proved). They become `failed` with
-- state_reason 'not_submitted' and stay unbilled (no submitted_at,
-- billable_units, cost). Only then may an operator replay them.
-- A handed-over row (scheduled_for > claimed_at) may be sent up to the
-- spread after its time, maybe on a later day: it is proved only when its
-- time + spread lies before complete_until, the end of the complete reports
-- (the caller's: the day's, or a following day's once that one is complete).
-- Parameters: day_start, day_end, spread (interval), complete_until, now. Returns how many rows moved.
WITH moved AS (
    UPDATE msg.outbound_message m
       SET state = 'failed',
           state_reason = 'not_submitted',
           reconciled_at = %(now)s::timestamptz,
           updated_at = %(now)s::timestamptz
     WHERE m.queue_state = 'unknown'  -- = state; outbound_message_open_idx reads queue_state (V73)
       AND msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for) >= %(day_start)s::timestamptz
       AND msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for) < %(day_end)s::timestamptz
       AND m.correlation_result = 'not_found'
       AND (msg.handed_over(m.claimed_at, m.scheduled_for) IS NOT TRUE
            OR msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for) + %(spread)s::interval
                < %(complete_until)s::timestamptz)
       AND m.provider_message_id IS NULL
       AND NOT EXISTS (SELECT 1 FROM dlr.delivery_receipts r
                        WHERE r.message_id = m.id AND r.message_created_at = m.created_at)
    RETURNING 1
)
SELECT count(*) FROM moved
