-- The first final event (by provider done time, then first seen, then id)
-- that disagrees with a message's settled outcome, onto the decisions of
-- the messages that have one (has_conflict, reconcile_apply_decide.sql):
-- kept beside the applied final, counted, never applied. A day without
-- conflicts reads no event here (the join's build side is empty).
-- Updates the work table reconcile_work.reconcile_message_decisions.
UPDATE reconcile_work.reconcile_message_decisions d
   SET conflict_word = c.status_word
  FROM (SELECT DISTINCT ON (e.message_id, e.message_created_at)
               e.message_id, e.message_created_at, e.status_word
          FROM reconcile_work.reconcile_message_decisions s
          JOIN reconcile_work.reconcile_events e ON e.message_id = s.message_id AND e.message_created_at = s.message_created_at
         WHERE s.has_conflict
           AND e.outcome IN ('delivered', 'failed', 'expired')
           AND e.outcome IS DISTINCT FROM s.settled_outcome
         ORDER BY e.message_id, e.message_created_at, e.provider_done_at NULLS LAST, e.first_seen_at, e.receipt_id
       ) c
 WHERE d.message_id = c.message_id AND d.message_created_at = c.message_created_at
