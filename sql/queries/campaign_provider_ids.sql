-- The provider's ids on a campaign's rows: each provider campaign and
-- transaction (uuId) with its rows, how many of them the provider still
-- holds (`scheduled`), and how many were sent (submitted_at set) with the
-- time the first went: `campaigns show` names the transactions that went
-- before a cancel or at the old time of a reschedule cut off by it
-- (docs/design.md#cancel-and-reschedule). In the order the rows were written.
-- Parameters: campaign_id.
-- Returns the columns of sms_pipeline.intake.campaigns.ProviderIds, in its field order.
SELECT provider_campaign_id, provider_txn_id, count(*) AS messages,
       count(*) FILTER (WHERE state = 'scheduled') AS scheduled,
       count(submitted_at) AS sent, min(submitted_at) AS sent_at
  FROM msg.outbound_message
 WHERE campaign_id = %(campaign_id)s AND (provider_txn_id IS NOT NULL OR provider_campaign_id IS NOT NULL)
 GROUP BY provider_campaign_id, provider_txn_id
 ORDER BY min(id)
