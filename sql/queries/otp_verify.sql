-- Verify an entered OTP code: one atomic statement.
--
-- The candidate is the newest code sent to (tenant, recipient) for this
-- purpose and session binding (a resend supersedes the earlier code; a code
-- bound to another session, or to none, is not a candidate). FOR UPDATE
-- serialises verifications of one code: a second verify waits, then reads
-- the row as the first left it, so of two concurrent verifies of a right
-- code exactly one answers 'ok' and the other 'used'; concurrent wrong
-- guesses each count. In order: 'used' (consumed before), 'expired',
-- 'locked' (the attempt limit was reached), 'ok' (the HMACs are equal: the
-- code is consumed) or 'wrong' (one more attempt counted); no candidate at
-- all: 'no_such_code'.
-- The comparison is between two HMAC-SHA256 values of equal length: timing
-- can tell at most how many leading bytes of two keyed digests agree, which
-- says nothing about the code without the key.
-- Parameters: tenant_id, recipient, purpose, session_binding (or NULL),
-- code_hmac (32 bytes), now.
-- Returns one row: result, attempts_left.
WITH candidate AS (
    SELECT v.id, v.code_hmac, v.expires_at, v.consumed_at, v.attempts, v.max_attempts
      FROM msg.otp_verification v
     WHERE v.tenant_id = %(tenant_id)s
       AND v.recipient = %(recipient)s
       AND v.purpose = %(purpose)s
       AND v.session_binding IS NOT DISTINCT FROM %(session_binding)s::text
     ORDER BY v.created_at DESC, v.id DESC
     LIMIT 1
       FOR UPDATE
),
verdict AS (
    SELECT c.id, c.attempts, c.max_attempts,
           CASE WHEN c.consumed_at IS NOT NULL THEN 'used'
                WHEN c.expires_at <= %(now)s::timestamptz THEN 'expired'
                WHEN c.attempts >= c.max_attempts THEN 'locked'
                WHEN c.code_hmac = %(code_hmac)s::bytea THEN 'ok'
                ELSE 'wrong'
           END AS result
      FROM candidate c
),
applied AS (
    UPDATE msg.otp_verification v
       SET consumed_at = CASE WHEN d.result = 'ok' THEN %(now)s::timestamptz END,
           attempts = v.attempts + CASE WHEN d.result = 'wrong' THEN 1 ELSE 0 END
      FROM verdict d
     WHERE v.id = d.id
       AND d.result IN ('ok', 'wrong')
       AND v.consumed_at IS NULL
    RETURNING v.attempts, v.max_attempts
)
SELECT COALESCE((SELECT result FROM verdict), 'no_such_code') AS result,
       COALESCE((SELECT max_attempts - attempts FROM applied),
                (SELECT max_attempts - attempts FROM verdict), 0) AS attempts_left
