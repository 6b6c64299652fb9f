-- The result of every msgId that was not matched: `ambiguous` when some
-- pass found candidates for it (none of them a match), else `not_found`
-- (matched by nothing after all passes: the orphan step takes its events).
-- The matched msgIds are taken out by an anti-join on the matched pairs, so
-- the statement never groups the day's pairs by msgId; what is left (the
-- msgIds no pass placed: the day's few and the waiting events' backlog)
-- meets the pairs that were no match. (Joins, not an EXISTS per msgId in the
-- select list: that would scan the pairs once for every unmatched msgId.)
-- Creates the work table reconcile_work.reconcile_unmatched (msg_id, result).
CREATE UNLOGGED TABLE reconcile_work.reconcile_unmatched AS
SELECT u.msg_id,
       CASE WHEN c.msg_id IS NULL THEN 'not_found' ELSE 'ambiguous' END::msg.correlation_result AS result
  FROM reconcile_work.reconcile_uncorrelated u
  LEFT JOIN (SELECT DISTINCT msg_id FROM reconcile_work.reconcile_decisions WHERE NOT matched) c
         ON c.msg_id = u.msg_id
 WHERE NOT EXISTS (SELECT 1 FROM reconcile_work.reconcile_decisions d WHERE d.msg_id = u.msg_id AND d.matched)
