-- Rows that are a candidate of an ambiguous pair: marked `ambiguous`, with
-- how far reconstruction looked when it found them (the window, or for a
-- handed-over row, scheduled_for > claimed_at, the spread after its time).
-- Their state does not move and they are never re-sent: they wait for
-- evidence or a person.
-- Parameters: window_ms, spread_ms, now. Returns how many rows changed.
WITH ambiguous AS (
    SELECT message_id, message_created_at, bool_or(pass = 3) AS by_reconstruction
      FROM reconcile_work.reconcile_decisions
     WHERE NOT matched
     GROUP BY message_id, message_created_at
),
changed AS (
    UPDATE msg.outbound_message m
       SET correlation_result = 'ambiguous',
           correlation_window_ms = CASE WHEN a.by_reconstruction IS NOT TRUE THEN m.correlation_window_ms
                                        WHEN msg.handed_over(m.claimed_at, m.scheduled_for) THEN %(spread_ms)s ELSE %(window_ms)s END,
           reconciled_at = %(now)s::timestamptz,
           updated_at = %(now)s::timestamptz
      FROM ambiguous a
     WHERE m.id = a.message_id
       AND m.created_at = a.message_created_at
       AND (m.correlation_result, m.correlation_window_ms)
           IS DISTINCT FROM ('ambiguous'::msg.correlation_result,
                             CASE WHEN a.by_reconstruction IS NOT TRUE THEN m.correlation_window_ms
                                  WHEN msg.handed_over(m.claimed_at, m.scheduled_for) THEN %(spread_ms)s ELSE %(window_ms)s END)
    RETURNING 1
)
SELECT count(*) FROM changed
