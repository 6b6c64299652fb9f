-- One batch of `messages forget` on the message side, found through
-- msg.message_lookup's recipient index (the message table has no index on
-- the number): in each message row the number becomes the marker, the body
-- goes (its length kept, as redaction keeps it) and a row not yet sent
-- expires unsent (state_reason 'erased'); ids, states of sent rows, units and
-- cost stay. The lookup row and the OTP verification of each message take the
-- marker in the same statement, so a lookup still holding the number always
-- points at a message still to erase. The msgIds join dlr.erased_message_ids.
-- Parameters: recipient (E.164 digits), tenant (NULL: every tenant), marker,
-- now (application clock), batch_size.
-- Returns (messages, lookups, otp_verifications) erased; fewer lookups than batch_size: done.
WITH batch AS (
    SELECT attempt_key, message_id, message_created_at
      FROM msg.message_lookup
     WHERE recipient = %(recipient)s
       AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s::text)
     LIMIT %(batch_size)s
       FOR UPDATE
), messages AS (
    UPDATE msg.outbound_message m
       SET recipient = %(marker)s,
           state = CASE WHEN m.state = 'pending' THEN 'expired'::msg.message_state ELSE m.state END,
           state_reason = CASE WHEN m.state = 'pending' THEN 'erased' ELSE m.state_reason END,
           body = NULL,
           body_length = COALESCE(m.body_length, char_length(m.body)),
           body_redacted_at = COALESCE(m.body_redacted_at, %(now)s::timestamptz),
           updated_at = %(now)s::timestamptz
      FROM batch b
     WHERE m.id = b.message_id AND m.created_at = b.message_created_at
       AND m.recipient = %(recipient)s
    RETURNING m.provider_message_id
), lookups AS (
    UPDATE msg.message_lookup l SET recipient = %(marker)s FROM batch b WHERE l.attempt_key = b.attempt_key
    RETURNING 1
), verifications AS (
    UPDATE msg.otp_verification v SET recipient = %(marker)s
      FROM batch b
     WHERE v.message_id = b.message_id AND v.message_created_at = b.message_created_at
       AND v.recipient = %(recipient)s
    RETURNING 1
), ids AS (
    INSERT INTO dlr.erased_message_ids (provider_message_id, marker)
    SELECT DISTINCT provider_message_id, %(marker)s FROM messages WHERE provider_message_id IS NOT NULL
    ON CONFLICT (provider_message_id) DO NOTHING
)
SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM lookups), (SELECT count(*) FROM verifications)
