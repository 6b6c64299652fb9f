-- `unknown` rows with a matched receipt: the provider did take them, so
-- they become `submitted` (a legal move; unknown -> delivered is not, the
-- final follows in the next statement). They are billed now as the worker
-- bills at submission: units = segments (one recipient per row), cost =
-- units x the rate-card price valid at the provider's submit time (days in
-- the provider zone), NULL when there is none (counted as unpriced, never 0).
-- An `unknown` row was never billed, so nothing immutable is overwritten.
-- The provider's submit time is its msgId's (reconcile_uncorrelated), joined
-- here, where only the `unknown` rows use it, rather than in every decision.
-- Parameters: time_zone, now. Returns how many rows moved.
WITH moved AS (
    UPDATE msg.outbound_message m
       SET state = 'submitted',
           state_reason = 'submission_confirmed',
           submitted_at = s.submit_at,
           billable_units = COALESCE(m.billable_units, m.segments),
           (cost, cost_currency) = (
               SELECT COALESCE(m.billable_units, m.segments) * p.unit_price, p.currency
                 FROM msg.unit_price(m.tenant_id, m.channel, m.message_class, s.submit_at, %(time_zone)s) AS p),
           updated_at = %(now)s::timestamptz
      FROM reconcile_work.reconcile_message_decisions d
      JOIN reconcile_work.reconcile_uncorrelated u ON u.msg_id = d.msg_id
     CROSS JOIN LATERAL (
           -- the provider's submit time; inside a DST fall-back hour, the reading nearer our own attempt time
           SELECT CASE WHEN u.alt_submit_at IS NOT NULL
                        AND abs(EXTRACT(EPOCH FROM u.alt_submit_at - d.attempt_at))
                          < abs(EXTRACT(EPOCH FROM u.submit_at - d.attempt_at))
                       THEN u.alt_submit_at ELSE u.submit_at END AS submit_at) s
     WHERE m.id = d.message_id
       AND m.created_at = d.message_created_at
       AND m.state = 'unknown'
       AND d.old_state = 'unknown'
    RETURNING 1
)
SELECT count(*) FROM moved
