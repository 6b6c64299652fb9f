-- Every staged request of the intake batch with the row that now holds its
-- key (new or already there), in request order, with that row's campaign.
-- Parameters: none.
SELECT s.ord, m.id, m.created_at, m.attempt_key, m.state::text, m.campaign_id
  FROM worker_intake_staging s
  JOIN msg.business_key_registry r ON r.tenant_id = s.tenant_id AND r.business_key = s.business_key
  JOIN msg.outbound_message m ON m.id = r.message_id AND m.created_at = r.message_created_at
 ORDER BY s.ord
