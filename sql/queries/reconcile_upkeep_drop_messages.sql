-- Message partitions that ended before the message horizon, dropped with
-- their registry entries; run after the OTP purge (a partition still
-- referenced by verifications is kept).
-- Parameters: messages_before. Returns how many were dropped.
SELECT msg.drop_message_partitions_before(%(messages_before)s::timestamptz)
