-- OTP verifications the next upkeep purges before it drops message
-- partitions (msg.purge_otp_verifications: expired before
-- otp_expired_before); read-only. Parameters: otp_expired_before. Returns the count.
SELECT count(*) FROM msg.otp_verification WHERE expires_at < %(otp_expired_before)s::timestamptz
