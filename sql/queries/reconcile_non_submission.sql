-- Proof of non-submission (docs/design.md#proof-of-non-submission): `unknown` rows whose attempt time
-- lies in a provider day whose complete day report is loaded (the caller
-- checks completeness) and for which no pass found anything: no msgId, no
-- linked receipt, `not_found` (decided in the same transaction, after all
-- passes; `ambiguous` rows are not proved). They become `failed` with
-- state_reason 'not_submitted' and stay unbilled (no submitted_at,
-- billable_units, cost). Only then may an operator replay them.
-- Parameters: day_start, day_end, now. Returns how many rows moved.
WITH moved AS (
    UPDATE msg.outbound_message m
       SET state = 'failed',
           state_reason = 'not_submitted',
           reconciled_at = %(now)s::timestamptz,
           updated_at = %(now)s::timestamptz
     WHERE m.state = 'unknown'
       AND COALESCE(m.submitted_at, m.claimed_at) >= %(day_start)s::timestamptz
       AND COALESCE(m.submitted_at, m.claimed_at) < %(day_end)s::timestamptz
       AND m.correlation_result = 'not_found'
       AND m.provider_message_id IS NULL
       -- Handed to the provider with a scheduleTime (a provider-side campaign): the provider may still send it
       -- at its time, so the claim day's report proves nothing; it stays unknown until a report shows it.
       AND NOT (m.scheduled_for IS NOT NULL AND m.scheduled_for > m.claimed_at)
       AND NOT EXISTS (SELECT 1 FROM dlr.delivery_receipts r
                        WHERE r.message_id = m.id AND r.message_created_at = m.created_at)
    RETURNING 1
)
SELECT count(*) FROM moved
