-- Intake of OTP requests: what each new OTP message is for (purpose) and the
-- session that asked for it, in the intake's own transaction. Only rows that
-- really are OTP messages still waiting to be sent get one; a repeated event
-- keeps the request its first intake recorded.
-- Parameters: ids, created_ats (the rows' keys), purposes, session_bindings
-- (parallel arrays, one entry per message).
INSERT INTO msg.otp_request (message_id, message_created_at, purpose, session_binding)
SELECT m.id, m.created_at, r.purpose, r.session_binding
  FROM unnest(%(ids)s::bigint[], %(created_ats)s::timestamptz[], %(purposes)s::text[],
              %(session_bindings)s::text[]) AS r(message_id, message_created_at, purpose, session_binding)
  JOIN msg.outbound_message m ON m.id = r.message_id AND m.created_at = r.message_created_at
 WHERE m.message_class = 'otp'
   AND m.state = 'pending'
ON CONFLICT (message_id, message_created_at) DO NOTHING
