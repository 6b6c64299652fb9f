-- The result of every msgId that was not matched: `ambiguous` when some
-- pass found several candidates, else `not_found` (matched by nothing after
-- all passes: the orphan step takes its events). (A join, not an EXISTS
-- per msgId in the select list: that would scan the decisions once for
-- every unmatched msgId.)
-- Creates the work table reconcile_work.reconcile_unmatched (msg_id, result).
CREATE UNLOGGED TABLE reconcile_work.reconcile_unmatched AS
WITH placed AS (
    SELECT msg_id, bool_or(matched) AS matched
      FROM reconcile_work.reconcile_decisions
     GROUP BY msg_id
)
SELECT u.msg_id,
       CASE WHEN p.msg_id IS NULL THEN 'not_found' ELSE 'ambiguous' END::msg.correlation_result AS result
  FROM reconcile_work.reconcile_uncorrelated u
  LEFT JOIN placed p ON p.msg_id = u.msg_id
 WHERE p.matched IS NOT TRUE
