-- What an OTP is for, from intake until its code is sent.
--
-- The code (and with it msg.otp_verification) exists only from the send on:
-- it is made by the worker just before the provider call, so that a code's
-- life starts when it leaves. What it authorises (purpose) and for which
-- session is known earlier, at intake: it waits here, one row per OTP
-- message, written in the intake's transaction. The send copies it into the
-- verification row in the transaction that records the outcome.

CREATE TABLE msg.otp_request (
    message_id          BIGINT      NOT NULL,
    message_created_at  TIMESTAMPTZ NOT NULL,
    purpose             TEXT        NOT NULL,   -- a login code must not authorise a payment
    session_binding     TEXT,                   -- an opaque id of the session that asked for it

    PRIMARY KEY (message_id, message_created_at),
    CONSTRAINT otp_request_message_fkey FOREIGN KEY (message_id, message_created_at)
        REFERENCES msg.outbound_message (id, created_at) ON DELETE CASCADE,
    CONSTRAINT otp_request_purpose_check CHECK (purpose <> ''),
    CONSTRAINT otp_request_session_binding_check CHECK (session_binding <> '')
);

-- Verification reads the newest code of (tenant, recipient, purpose) whether
-- or not it was used (a used newest code answers "used", it does not fall
-- back to an older one), so the partial index of V7 does not serve it.
CREATE INDEX otp_verification_newest_idx
    ON msg.otp_verification (tenant_id, recipient, purpose, created_at DESC, id DESC);


-- The sidecar's retention, extended to the requests: a request whose message
-- is no longer waiting to be sent (pending/claimed) and was created before
-- p_before has done its job. The foreign key blocks detaching a message
-- partition while requests reference it, so this runs before message
-- partitions are dropped (reconcile upkeep calls it first). Returns the
-- verifications purged, as before.
CREATE OR REPLACE FUNCTION msg.purge_otp_verifications(p_before timestamptz) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    purged bigint;
BEGIN
    DELETE FROM msg.otp_verification WHERE expires_at < p_before;
    GET DIAGNOSTICS purged = ROW_COUNT;
    DELETE FROM msg.otp_request r
     USING msg.outbound_message m
     WHERE m.id = r.message_id AND m.created_at = r.message_created_at
       AND r.message_created_at < p_before
       AND m.created_at < p_before
       AND m.state NOT IN ('pending', 'claimed');
    RETURN purged;
END;
$$;
