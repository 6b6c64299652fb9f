-- For each superseded row, a copy of what it is (routing, content, schedule)
-- as a fresh pending attempt that points back at it (replaces_id); an expiry
-- that already passed is replaced by %(expires_at)s (the new attempt's own
-- send window), or the new row would expire unsent at once. Each insert takes the business key over from its superseded row
-- (the registry trigger allows exactly that). Used by the operator replay
-- and the automatic re-send after proof of non-submission alike. A fixed
-- body keeps its text fingerprint; an OTP's is made with its new code.
-- Parameters: ids, created_ats (parallel arrays: the superseded rows), now, expires_at.
-- Returns each new row's replaces_id, id, created_at and attempt_key.
INSERT INTO msg.outbound_message (
    business_key, replaces_id, tenant_id, channel, message_class, recipient, sender_id, body, encoding,
    segments, template_id, dlt_entity_id, dlt_template_id, scheduled_for, expires_at, message_fingerprint,
    created_at, updated_at)
SELECT m.business_key, m.id, m.tenant_id, m.channel, m.message_class, m.recipient, m.sender_id, m.body, m.encoding,
       m.segments, m.template_id, m.dlt_entity_id, m.dlt_template_id, m.scheduled_for,
       CASE WHEN m.expires_at > %(now)s::timestamptz THEN m.expires_at ELSE %(expires_at)s::timestamptz END,
       CASE WHEN m.message_class <> 'otp' THEN m.message_fingerprint END,
       %(now)s::timestamptz, %(now)s::timestamptz
  FROM msg.outbound_message m
  JOIN unnest(%(ids)s::bigint[], %(created_ats)s::timestamptz[]) AS t(id, created_at)
    ON m.id = t.id AND m.created_at = t.created_at
 WHERE m.state = 'superseded'
 ORDER BY m.id
RETURNING replaces_id, id, created_at, attempt_key
