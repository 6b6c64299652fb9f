-- The provider's ids on a campaign's rows: each provider campaign and
-- transaction (uuId) with its rows, and how many of them the provider still
-- holds (`scheduled`), in the order the rows were written.
-- Parameters: campaign_id.
SELECT provider_campaign_id, provider_txn_id, count(*) AS messages,
       count(*) FILTER (WHERE state = 'scheduled') AS scheduled
  FROM msg.outbound_message
 WHERE campaign_id = %(campaign_id)s AND (provider_txn_id IS NOT NULL OR provider_campaign_id IS NOT NULL)
 GROUP BY provider_campaign_id, provider_txn_id
 ORDER BY min(id)
