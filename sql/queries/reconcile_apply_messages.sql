-- One statement for every matched message: msgId (and transaction id) onto
-- the row, correlation result, evidence (the first match's: a later receipt
-- found by the msgId the match stored keeps it), how far reconstruction
-- looked for a row it matched (the window, or for a handed-over row,
-- scheduled_for > claimed_at, the spread after its time, as
-- reconcile_correlate_not_found_rows.sql records), and the decided state move
-- (only `submitted` -> final; every other row keeps its state), with the
-- applied final's word, cause and delivery time, and the first conflicting
-- final kept beside it. A receipt that moves a row to `failed` or `expired`
-- writes our classification beside the provider's cause: state_reason
-- 'receipt_failed' / 'receipt_expired' (a delivered row keeps its reason).
-- Guarded by the state the decision was made from,
-- and only rows whose values change: a re-run updates nothing.
-- Parameters: window_ms, spread_ms, now. Returns (from_state, to_state, rows).
WITH target AS (
    SELECT d.*,
           CASE WHEN d.applies THEN d.final_word END AS applied_word,
           CASE WHEN d.applies THEN d.final_cause END AS applied_cause,
           CASE WHEN d.applies AND d.final_outcome = 'delivered' THEN d.final_done_at END AS applied_delivered_at,
           CASE WHEN d.new_state IS DISTINCT FROM d.evidence_state AND d.new_state IN ('failed', 'expired')
                THEN 'receipt_' || d.new_state::text END AS receipt_reason
      FROM reconcile_work.reconcile_message_decisions d
),
moved AS (
    UPDATE msg.outbound_message m
       SET state = t.new_state,
           state_reason = COALESCE(t.receipt_reason, m.state_reason),
           provider_message_id = COALESCE(m.provider_message_id, t.msg_id),
           provider_txn_id = COALESCE(m.provider_txn_id, t.txn_id),
           correlation_result = 'matched',
           correlation_evidence = COALESCE(m.correlation_evidence, t.evidence),
           correlation_window_ms = CASE WHEN t.pass IS DISTINCT FROM 3 THEN m.correlation_window_ms
                                        WHEN msg.handed_over(m.claimed_at, m.scheduled_for) THEN %(spread_ms)s ELSE %(window_ms)s END,
           final_status = COALESCE(t.applied_word, m.final_status),
           provider_cause = CASE WHEN t.applies THEN t.applied_cause ELSE m.provider_cause END,
           delivered_at = COALESCE(t.applied_delivered_at, m.delivered_at),
           conflicting_final_status = COALESCE(m.conflicting_final_status, t.conflict_word),
           reconciled_at = %(now)s::timestamptz,
           updated_at = %(now)s::timestamptz
      FROM target t
     WHERE m.id = t.message_id
       AND m.created_at = t.message_created_at
       AND m.state = t.evidence_state
       AND (m.state, m.state_reason, m.provider_message_id, m.provider_txn_id, m.correlation_result,
            m.correlation_evidence, m.correlation_window_ms,
            m.final_status, m.provider_cause, m.delivered_at, m.conflicting_final_status)
           IS DISTINCT FROM
           (t.new_state, COALESCE(t.receipt_reason, m.state_reason), COALESCE(m.provider_message_id, t.msg_id), COALESCE(m.provider_txn_id, t.txn_id),
            'matched'::msg.correlation_result,
            COALESCE(m.correlation_evidence, t.evidence),
            CASE WHEN t.pass IS DISTINCT FROM 3 THEN m.correlation_window_ms
                 WHEN msg.handed_over(m.claimed_at, m.scheduled_for) THEN %(spread_ms)s ELSE %(window_ms)s END,
            COALESCE(t.applied_word, m.final_status),
            CASE WHEN t.applies THEN t.applied_cause ELSE m.provider_cause END,
            COALESCE(t.applied_delivered_at, m.delivered_at),
            COALESCE(m.conflicting_final_status, t.conflict_word))
    RETURNING t.evidence_state AS from_state, m.state AS to_state
)
SELECT from_state::text, to_state::text, count(*) FROM moved GROUP BY 1, 2
