-- One new pending row per staged key not yet registered (the first line
-- wins within a batch), inserted in input order so ids follow the file. A
-- key another transaction registers meanwhile makes this fail with a unique
-- violation; the caller retries it (the NOT EXISTS then skips that key).
-- Parameters: now (created_at and updated_at of the new rows), campaign_id
-- (the msg.campaign every new row joins; NULL outside a campaign).
-- Returns the id of every row inserted.
INSERT INTO msg.outbound_message (
    business_key, tenant_id, channel, message_class, recipient, sender_id, body, encoding, segments,
    template_id, dlt_entity_id, dlt_template_id, scheduled_for, expires_at, message_fingerprint,
    campaign_id, created_at, updated_at)
SELECT business_key, tenant_id, channel::msg.message_channel, message_class, recipient, sender_id, body,
       encoding, segments, template_id, dlt_entity_id, dlt_template_id, scheduled_for, expires_at,
       message_fingerprint, %(campaign_id)s::bigint, %(now)s, %(now)s
  FROM (SELECT DISTINCT ON (s.tenant_id, s.business_key) s.*
          FROM worker_intake_staging s
         WHERE NOT EXISTS (SELECT 1 FROM msg.business_key_registry r
                            WHERE r.tenant_id = s.tenant_id AND r.business_key = s.business_key)
         ORDER BY s.tenant_id, s.business_key, s.ord) AS first_of_key
 ORDER BY ord
RETURNING id
