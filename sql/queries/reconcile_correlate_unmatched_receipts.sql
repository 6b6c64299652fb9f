-- Receipt events whose msgId was not matched: `ambiguous` when some pass
-- found several candidates, else `not_found` (matched by nothing after all
-- passes: the orphan step takes those). Only events whose result changes.
-- (A join, not an EXISTS per msgId in the select list: that would scan
-- the decisions once for every unmatched msgId.)
-- Parameters: now. Returns (correlation_result, events) counts.
WITH placed AS (
    SELECT msg_id, bool_or(matched) AS matched
      FROM reconcile_decisions
     GROUP BY msg_id
),
results AS (
    SELECT u.msg_id,
           CASE WHEN p.msg_id IS NULL THEN 'not_found' ELSE 'ambiguous' END::msg.correlation_result AS result
      FROM reconcile_uncorrelated u
      LEFT JOIN placed p ON p.msg_id = u.msg_id
     WHERE p.matched IS NOT TRUE
),
changed AS (
    UPDATE dlr.delivery_receipts r
       SET correlation_result = x.result,
           correlated_at = %(now)s::timestamptz
      FROM results x
     WHERE r.provider_message_id = x.msg_id
       AND r.message_id IS NULL
       AND r.correlation_result IS DISTINCT FROM x.result
    RETURNING r.correlation_result
)
SELECT correlation_result::text, count(*) FROM changed GROUP BY 1
