-- OTP sidecar (seed 000): the verification state that only OTP rows carry,
-- short-lived and separately purged. Never the code: an HMAC-SHA256 of it
-- under a key from settings, so a leaked table cannot be brute-forced offline
-- over a 6-digit space without the key.

CREATE TABLE msg.otp_verification (
    id                  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id          BIGINT      NOT NULL,
    message_created_at  TIMESTAMPTZ NOT NULL,
    tenant_id           TEXT        NOT NULL,
    recipient           TEXT        NOT NULL,
    purpose             TEXT        NOT NULL,   -- a login code must not authorise a payment
    session_binding     TEXT,
    code_hmac           BYTEA       NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at          TIMESTAMPTZ NOT NULL,
    retry_after_s       INTEGER,                -- the provider's retryAfter, as given
    retry_after_at      TIMESTAMPTZ,            -- no resend before this instant
    attempts            SMALLINT    NOT NULL DEFAULT 0,
    max_attempts        SMALLINT    NOT NULL,
    consumed_at         TIMESTAMPTZ,

    -- Carries the partition column: the message row is found by its primary
    -- key, and its partition cannot be detached while this row exists.
    CONSTRAINT otp_verification_message_fkey FOREIGN KEY (message_id, message_created_at)
        REFERENCES msg.outbound_message (id, created_at) ON DELETE CASCADE,
    CONSTRAINT otp_verification_message_unique UNIQUE (message_id, message_created_at),
    CONSTRAINT otp_verification_code_hmac_check CHECK (octet_length(code_hmac) = 32),
    CONSTRAINT otp_verification_purpose_check CHECK (purpose <> ''),
    CONSTRAINT otp_verification_expiry_check CHECK (expires_at > created_at),
    CONSTRAINT otp_verification_attempts_check CHECK (attempts >= 0 AND attempts <= max_attempts),
    CONSTRAINT otp_verification_max_attempts_check CHECK (max_attempts > 0),
    CONSTRAINT otp_verification_retry_after_check CHECK (retry_after_s >= 0)
);

-- Verification looks up the live code for (tenant, recipient, purpose).
CREATE INDEX otp_verification_live_idx
    ON msg.otp_verification (tenant_id, recipient, purpose, created_at)
    WHERE consumed_at IS NULL;
-- Purge by expiry, and the partition-drop check by message month.
CREATE INDEX otp_verification_expires_at_idx ON msg.otp_verification (expires_at);
CREATE INDEX otp_verification_message_created_at_idx ON msg.otp_verification (message_created_at);


-- Delete verifications that expired before p_before (they can no longer be
-- used); returns how many.
CREATE FUNCTION msg.purge_otp_verifications(p_before timestamptz) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    purged bigint;
BEGIN
    DELETE FROM msg.otp_verification WHERE expires_at < p_before;
    GET DIAGNOSTICS purged = ROW_COUNT;
    RETURN purged;
END;
$$;


-- Retention for messages: detach and drop every monthly partition that ends
-- on or before p_before, together with its registry entries (the keys of
-- dropped rows are released). A partition that still has OTP sidecar rows is
-- skipped with a NOTICE (purge the sidecar first). Returns how many were dropped.
CREATE FUNCTION msg.drop_message_partitions_before(p_before timestamptz) RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    part record;
    lower_bound timestamptz;
    upper_bound timestamptz;
    dropped int := 0;
BEGIN
    PERFORM pg_advisory_xact_lock('msg.outbound_message'::regclass::oid::bigint);
    FOR part IN SELECT * FROM msg.month_partitions('msg.outbound_message', 'outbound_message') LOOP
        lower_bound := part.month::timestamp AT TIME ZONE 'UTC';
        upper_bound := (part.month + interval '1 month')::timestamp AT TIME ZONE 'UTC';
        CONTINUE WHEN upper_bound > p_before;
        IF EXISTS (SELECT 1 FROM msg.otp_verification
                    WHERE message_created_at >= lower_bound AND message_created_at < upper_bound) THEN
            RAISE NOTICE 'drop_message_partitions_before: % kept, OTP verifications still reference it',
                         part.partition;
            CONTINUE;
        END IF;
        DELETE FROM msg.business_key_registry
         WHERE message_created_at >= lower_bound AND message_created_at < upper_bound;
        DELETE FROM msg.provider_message_id_registry
         WHERE message_created_at >= lower_bound AND message_created_at < upper_bound;
        EXECUTE format('ALTER TABLE msg.outbound_message DETACH PARTITION %s', part.partition);
        EXECUTE format('DROP TABLE %s', part.partition);
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END;
$$;
