-- Per message class, of the messages created (a campaign row: due) in [since, until) that were
-- submitted (billed: submitted_at set, whatever their state now), the share
-- still `submitted`, i.e. with no final receipt yet. The denominator is
-- everything submitted, not delivered + failed: if receipts stop arriving
-- the ratio climbs towards 1 instead of freezing at a healthy value.
-- Every class has a row; the ratio is 0 when nothing was submitted.
-- Parameters: since, until.
SELECT c.message_class,
       count(m.id) FILTER (WHERE m.submitted_at IS NOT NULL) AS submitted,
       count(m.id) FILTER (WHERE m.state = 'submitted') AS still_pending,
       COALESCE(
           (count(m.id) FILTER (WHERE m.state = 'submitted'))::numeric
             / NULLIF(count(m.id) FILTER (WHERE m.submitted_at IS NOT NULL), 0),
           0) AS still_pending_ratio
  FROM (VALUES ('otp'), ('transactional'), ('promotional')) AS c (message_class)
  LEFT JOIN msg.outbound_message m
         ON m.message_class = c.message_class
        AND m.created_at < %(until)s::timestamptz
        -- A campaign row counts from its send time, not from when it was loaded; a lower bound on created_at
        -- keeps the partitions read to the last weeks (a campaign loaded further ahead is not counted).
        AND m.created_at >= %(since)s::timestamptz - interval '35 days'
        AND GREATEST(m.created_at, m.scheduled_for) >= %(since)s::timestamptz
        AND GREATEST(m.created_at, m.scheduled_for) < %(until)s::timestamptz
 GROUP BY c.message_class
 ORDER BY c.message_class
