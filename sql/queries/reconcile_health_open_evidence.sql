-- Rows waiting for evidence or a person: `unknown` rows (possibly billed,
-- never re-sent blind) and how many of them are older than the point by
-- which the proof of non-submission should have decided them; rows left
-- `ambiguous` while still open. Index: outbound_message_open_idx.
-- Parameters: stale_before (attempt time). Returns one row of counts.
SELECT count(*) FILTER (WHERE state = 'unknown') AS unknown_open,
       count(*) FILTER (WHERE state = 'unknown'
                          AND msg.attempt_at(submitted_at, claimed_at, scheduled_for)
                              < %(stale_before)s::timestamptz) AS unknown_stale,
       count(*) FILTER (WHERE correlation_result = 'ambiguous') AS ambiguous_open
  FROM msg.outbound_message
 WHERE queue_state IN ('submitted', 'unknown')  -- = state; the partial indexes read queue_state (V73)
