-- Each matched message's events (the day's new ones and stored ones that
-- waited) reduced to one decision (DISTINCT ON),
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
-- not it. That is read off the smallest and largest final outcome in the
-- message's window (has_conflict), and the conflicting word is looked up for
-- those messages only, by reconcile_apply_conflicts.sql: at a million rows a
-- join of every event against every decision here found none and cost a
-- third of the statement.
-- The msgIds' own columns (reconcile_uncorrelated) are not joined here: only
-- reconstruction's evidence needs one (whether the texts agreed: pass 3's
-- same_text, carried by the decisions and events, so that no message probes
-- pass 3's pairs for it), and only an `unknown` row's confirmation the
-- provider's submit time (reconcile_apply_confirm_submission.sql, which picks
-- the DST reading nearer the attempt_at kept here). At a million messages
-- that join was about a quarter of the statement.
-- Outcomes and states are mapped with CASE over literals, not casts between
-- text and msg.message_state: the inlined CTEs evaluate new_state several
-- times a row, and each cast looks the enum label up in the catalog.
-- Creates the work table reconcile_work.reconcile_message_decisions.
CREATE UNLOGGED TABLE reconcile_work.reconcile_message_decisions AS
WITH per_message AS (
    -- One sort of the events serves the grouping and the first final: the
    -- window holds the whole message (its frame spans the partition), and
    -- its order puts the first final, if any, on the partition's first row,
    -- which DISTINCT ON keeps. msg_id, pass and same_text are that row's:
    -- the events of a message all come from its one matched decision
    -- (reconcile_apply_events.sql reads only decisions that are `matched`,
    -- one per msgId and one per message). The window repeats the ORDER BY's
    -- keys so that the one sort serves both, on Postgres 15 as on 18 (its
    -- full frame makes the order no matter to the aggregates).
    SELECT DISTINCT ON (e.message_id, e.message_created_at)
           e.message_id, e.message_created_at, e.msg_id, e.pass, e.same_text,
           min(e.provider_txn_id) OVER w AS txn_id,
           min(e.outcome) FILTER (WHERE k.is_final) OVER w AS min_final_outcome,
           max(e.outcome) FILTER (WHERE k.is_final) OVER w AS max_final_outcome,
           CASE WHEN k.is_final THEN e.receipt_id END AS final_receipt_id,
           CASE WHEN k.is_final THEN e.submit_month END AS final_submit_month,
           CASE WHEN k.is_final THEN e.status_word END AS final_word,
           CASE WHEN k.is_final THEN e.outcome END AS final_outcome,
           CASE WHEN k.is_final THEN e.cause END AS final_cause,
           CASE WHEN k.is_final THEN e.provider_done_at END AS final_done_at
      FROM reconcile_work.reconcile_events e
     CROSS JOIN LATERAL (SELECT e.outcome IN ('delivered', 'failed', 'expired') AS is_final) k
    WINDOW w AS (PARTITION BY e.message_id, e.message_created_at
                 ORDER BY k.is_final DESC NULLS LAST, e.provider_done_at NULLS LAST, e.first_seen_at, e.receipt_id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
     ORDER BY e.message_id, e.message_created_at,
              k.is_final DESC NULLS LAST, e.provider_done_at NULLS LAST, e.first_seen_at, e.receipt_id
),
decided AS (
    SELECT p.message_id, p.message_created_at, p.msg_id, p.pass, p.txn_id, p.min_final_outcome,
           p.max_final_outcome,
           CASE p.pass WHEN 1 THEN 'msgid' WHEN 2 THEN 'transaction'
                ELSE CASE WHEN p.same_text THEN 'fingerprint' ELSE 'reconstruction' END
           END AS evidence,
           a.attempt_at,
           m.state AS old_state,
           m.final_status AS old_final_status,
           m.state_reason AS old_state_reason,
           p.final_receipt_id, p.final_submit_month, p.final_word, p.final_outcome, p.final_cause,
           p.final_done_at,
           e.evidence_state,
           CASE WHEN e.evidence_state = 'submitted' AND p.final_outcome IS NOT NULL
                -- final_outcome is NULL or one of the three
                THEN CASE p.final_outcome WHEN 'delivered' THEN 'delivered'::msg.message_state
                                          WHEN 'failed' THEN 'failed'::msg.message_state
                                          WHEN 'expired' THEN 'expired'::msg.message_state END
                ELSE e.evidence_state END AS new_state
      FROM per_message p
      JOIN msg.outbound_message m ON m.id = p.message_id AND m.created_at = p.message_created_at
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
