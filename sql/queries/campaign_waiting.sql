-- A campaign's rows not yet sent (waiting here, with a worker, or held by
-- the provider), by state and due time: what a cancel or reschedule has
-- still to change, and how an unfinished one shows. An `unknown` row that
-- was handed over with a scheduleTime (the answer was ambiguous, or its
-- transaction could not be placed) may still be sent by the provider at its
-- time, and no uuId of ours reaches it: it is counted, so such a cancel never
-- reads as done (docs/design.md#cancel-and-reschedule).
-- Parameters: campaign_id.
SELECT state::text, scheduled_for, count(*) AS messages
  FROM msg.outbound_message
 WHERE campaign_id = %(campaign_id)s
   AND (queue_state IN ('pending', 'claimed', 'scheduled')  -- sending reads as claimed
        OR (queue_state = 'unknown' AND msg.handed_over(claimed_at, scheduled_for)))
 GROUP BY state, scheduled_for
 ORDER BY scheduled_for, state
