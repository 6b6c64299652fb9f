-- Message partitions that ended before the message horizon, dropped with
-- their registry entries once no OTP sidecar row references them and every
-- mart keeps the days of their rows (msg.drop_message_partitions_before);
-- run after the OTP purge.
-- Parameters: messages_before. Returns how many were dropped.
SELECT msg.drop_message_partitions_before(%(messages_before)s::timestamptz)
