-- The verification row of an OTP that left (or may have left) for the
-- provider, written in the transaction that records the send's outcome: an
-- HMAC of the code (never the code), the purpose and session binding its
-- request recorded at intake, expiry and the provider's retry-after counted
-- from the send, and the attempt limit in force. Only for a row the outcome
-- just made `submitted` or `unknown` (an ambiguous send may have delivered
-- the code, so it must be verifiable); a second write of the same send
-- changes nothing.
-- Parameters: id, created_at (the message row), code_hmac (32 bytes), now,
-- expiry_s, retry_after_s (or NULL), max_attempts.
-- Returns the verification row's id.
INSERT INTO msg.otp_verification (
    message_id, message_created_at, tenant_id, recipient, purpose, session_binding, code_hmac,
    created_at, expires_at, retry_after_s, retry_after_at, max_attempts)
SELECT m.id, m.created_at, m.tenant_id, m.recipient, r.purpose, r.session_binding, %(code_hmac)s::bytea,
       %(now)s::timestamptz,
       %(now)s::timestamptz + make_interval(secs => %(expiry_s)s::int),
       %(retry_after_s)s::int,
       %(now)s::timestamptz + make_interval(secs => %(retry_after_s)s::int),
       %(max_attempts)s::smallint
  FROM msg.outbound_message m
  JOIN msg.otp_request r ON r.message_id = m.id AND r.message_created_at = m.created_at
 WHERE m.id = %(id)s::bigint
   AND m.created_at = %(created_at)s::timestamptz
   AND m.message_class = 'otp'
   AND m.state IN ('submitted', 'unknown')
ON CONFLICT (message_id, message_created_at) DO NOTHING
RETURNING id
