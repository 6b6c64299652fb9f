-- The OTP sidecar's retention alone (msg.purge_otp_verifications), run by the
-- daily upkeep right before message partitions are dropped: the sidecar's
-- foreign keys pin a partition until it is purged.
-- Parameters: otp_expired_before. Returns the verifications purged.
SELECT msg.purge_otp_verifications(%(otp_expired_before)s::timestamptz)
