-- Receipt events whose msgId was not matched: `ambiguous` when some pass
-- found several candidates, else `not_found` (matched by nothing after all
-- passes: the orphan step takes those). Only events whose result changes.
-- Parameters: now. Returns (correlation_result, events) counts.
WITH results AS (
    SELECT u.msg_id,
           CASE WHEN EXISTS (SELECT 1 FROM reconcile_decisions d WHERE d.msg_id = u.msg_id)
                THEN 'ambiguous' ELSE 'not_found' END::msg.correlation_result AS result
      FROM reconcile_uncorrelated u
     WHERE NOT EXISTS (SELECT 1 FROM reconcile_decisions d WHERE d.msg_id = u.msg_id AND d.matched)
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
