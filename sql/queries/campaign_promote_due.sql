-- The provider transactions of `scheduled` rows whose time has passed (application clock): what the
-- worker asks the provider about (campaign/read of each provider campaign) before it promotes or gives up
-- anything. Oldest first, bounded; on outbound_message_scheduled_idx.
-- Parameters: now, limit. Returns (provider_campaign_id, provider_txn_id).
SELECT provider_campaign_id, provider_txn_id
  FROM msg.outbound_message
 WHERE queue_state = 'scheduled'  -- = state; the partial index reads queue_state
   AND scheduled_for <= %(now)s::timestamptz
 GROUP BY provider_campaign_id, provider_txn_id
 ORDER BY min(scheduled_for), provider_txn_id
 LIMIT %(limit)s
