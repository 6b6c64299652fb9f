-- Record an erased number's tombstone (idempotent) and return its marker: the
-- one recorded by an earlier erasure of the same number, else the one given.
-- Parameters: recipient_hmac (32 bytes), marker, erased_at.
WITH recorded AS (
    INSERT INTO msg.erased_recipients (recipient_hmac, marker, erased_at)
    VALUES (%(recipient_hmac)s, %(marker)s, %(erased_at)s)
    ON CONFLICT (recipient_hmac) DO NOTHING
    RETURNING marker
)
SELECT marker FROM recorded
UNION ALL
SELECT marker FROM msg.erased_recipients WHERE recipient_hmac = %(recipient_hmac)s
LIMIT 1
