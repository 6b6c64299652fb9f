-- Each matched message's new events reduced to one decision (DISTINCT ON),
-- forward only:
--   * any matched event is evidence the provider took the message: an
--     `unknown` row counts as `submitted` from here on;
--   * the first final event (by provider done time, then first seen, then
--     id) moves a `submitted` row to its final state; intermediate and
--     unmapped words never move a state;
--   * evidence names what the match rested on: the msgId, the transaction,
--     the text fingerprint (pass 3 with equal fingerprints on both sides:
--     the text would have told the row from any other candidate), or
--     reconstruction alone (pass 3 where a side had none, or a different
--     one: the lone candidate is kept, see the pass);
--   * settled_outcome is the row's final outcome after this run (NULL while
--     it has none, and for rows proved never submitted: any final receipt
--     for those contradicts the proof);
--   * the first final is `applied` only when it agrees with settled_outcome
--     and the row had no applied final yet; a later final that agrees is a
--     duplicate, one that disagrees a conflict (recorded, counted, never
--     applied).
-- A message has a conflict exactly when its final events do not all carry
-- settled_outcome: either they carry two outcomes, or their one outcome is
-- not it. That is read off the smallest and largest final outcome of the
-- grouping pass (has_conflict), and the conflicting word is looked up for
-- those messages only, by reconcile_apply_conflicts.sql: at a million rows a
-- join of every event against every decision here found none and cost a
-- third of the statement.
-- Outcomes and states are mapped with CASE over literals, not casts between
-- text and msg.message_state: the inlined CTEs evaluate new_state several
-- times a row, and each cast looks the enum label up in the catalog.
-- Creates the temporary table reconcile_message_decisions.
CREATE TEMPORARY TABLE reconcile_message_decisions ON COMMIT DROP AS
WITH per_message AS (
    SELECT message_id, message_created_at,
           min(msg_id) AS msg_id,
           min(pass) AS pass,
           min(provider_txn_id) AS txn_id,
           min(outcome) FILTER (WHERE outcome IN ('delivered', 'failed', 'expired')) AS min_final_outcome,
           max(outcome) FILTER (WHERE outcome IN ('delivered', 'failed', 'expired')) AS max_final_outcome
      FROM reconcile_events
     GROUP BY message_id, message_created_at
),
first_final AS (
    SELECT DISTINCT ON (message_id, message_created_at)
           message_id, message_created_at, receipt_id, submit_month, status_word, outcome, cause, provider_done_at
      FROM reconcile_events
     WHERE outcome IN ('delivered', 'failed', 'expired')
     ORDER BY message_id, message_created_at, provider_done_at NULLS LAST, first_seen_at, receipt_id
),
decided AS (
    SELECT p.message_id, p.message_created_at, p.msg_id, p.pass, p.txn_id, p.min_final_outcome,
           p.max_final_outcome,
           -- the provider's submit time; inside a DST fall-back hour, the
           -- reading nearer our own attempt time
           CASE WHEN u.alt_submit_at IS NOT NULL
                 AND abs(EXTRACT(EPOCH FROM u.alt_submit_at - a.attempt_at))
                   < abs(EXTRACT(EPOCH FROM u.submit_at - a.attempt_at))
                THEN u.alt_submit_at ELSE u.submit_at END AS submit_at,
           CASE p.pass WHEN 1 THEN 'msgid' WHEN 2 THEN 'transaction'
                ELSE CASE WHEN m.message_fingerprint = u.fingerprint THEN 'fingerprint' ELSE 'reconstruction' END
           END AS evidence,
           m.state AS old_state,
           m.final_status AS old_final_status,
           m.state_reason AS old_state_reason,
           f.receipt_id AS final_receipt_id,
           f.submit_month AS final_submit_month,
           f.status_word AS final_word,
           f.outcome AS final_outcome,
           f.cause AS final_cause,
           f.provider_done_at AS final_done_at,
           e.evidence_state,
           CASE WHEN e.evidence_state = 'submitted' AND f.outcome IS NOT NULL
                -- f.outcome is one of the three: first_final reads final events only
                THEN CASE f.outcome WHEN 'delivered' THEN 'delivered'::msg.message_state
                                    WHEN 'failed' THEN 'failed'::msg.message_state
                                    WHEN 'expired' THEN 'expired'::msg.message_state END
                ELSE e.evidence_state END AS new_state
      FROM per_message p
      JOIN msg.outbound_message m ON m.id = p.message_id AND m.created_at = p.message_created_at
      JOIN reconcile_uncorrelated u ON u.msg_id = p.msg_id
      LEFT JOIN first_final f ON f.message_id = p.message_id AND f.message_created_at = p.message_created_at
     CROSS JOIN LATERAL (
           SELECT CASE WHEN m.state = 'unknown' THEN 'submitted'::msg.message_state ELSE m.state END
                      AS evidence_state) e
     CROSS JOIN LATERAL (SELECT msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for) AS attempt_at) a
),
settled AS (
    SELECT d.*,
           CASE WHEN d.old_state_reason IS DISTINCT FROM 'not_submitted'
                THEN CASE d.new_state WHEN 'delivered' THEN 'delivered' WHEN 'failed' THEN 'failed'
                                      WHEN 'expired' THEN 'expired' END
           END AS settled_outcome
      FROM decided d
)
SELECT s.*,
       s.final_receipt_id IS NOT NULL
       AND s.old_final_status IS NULL
       AND s.final_outcome = s.settled_outcome AS applies,
       s.min_final_outcome IS NOT NULL
       AND (s.min_final_outcome <> s.max_final_outcome OR s.min_final_outcome IS DISTINCT FROM s.settled_outcome)
           AS has_conflict,
       NULL::text AS conflict_word
  FROM settled s
