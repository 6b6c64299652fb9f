-- Our side of the schedule cross-check (docs/design.md#schedule-cross-check):
-- the rows the provider holds for us (`scheduled`), one line per provider
-- transaction (uuId), with its campaign, its rows and the earliest and latest
-- time on them (the rows of one transaction share one time; two differing
-- is itself a difference). Reads outbound_message_scheduled_idx (V79).
-- Parameters: none.
SELECT provider_campaign_id,
       provider_txn_id,
       count(*)           AS messages,
       min(scheduled_for) AS first_scheduled_for,
       max(scheduled_for) AS last_scheduled_for
  FROM msg.outbound_message
 WHERE queue_state = 'scheduled'
 GROUP BY provider_campaign_id, provider_txn_id
 ORDER BY provider_campaign_id, provider_txn_id
