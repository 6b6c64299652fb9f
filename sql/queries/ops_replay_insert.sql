-- A copy of what the superseded message is (routing, content, schedule) as
-- a fresh pending attempt that points back at it (replaces_id); an expiry
-- that already passed is dropped, or the new row would expire unsent at
-- once. The insert takes the business key over from the superseded row
-- (the registry trigger allows exactly that).
-- Parameters: id, created_at (the superseded row), now.
-- Returns the new row's id, created_at and attempt_key.
INSERT INTO msg.outbound_message (
    business_key, replaces_id, tenant_id, channel, message_class, recipient, sender_id, body, encoding,
    segments, template_id, dlt_entity_id, dlt_template_id, scheduled_for, expires_at, created_at, updated_at)
SELECT business_key, id, tenant_id, channel, message_class, recipient, sender_id, body, encoding,
       segments, template_id, dlt_entity_id, dlt_template_id, scheduled_for,
       CASE WHEN expires_at > %(now)s THEN expires_at END, %(now)s, %(now)s
  FROM msg.outbound_message
 WHERE id = %(id)s AND created_at = %(created_at)s
RETURNING id, created_at, attempt_key
