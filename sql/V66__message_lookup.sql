-- Operator lookups by attempt key and by recipient move off the message
-- table. Every claim, outcome and reconciliation UPDATE of a message is a
-- new row version (its state sits in partial-index predicates, so none is
-- HOT) and enters every full index again; the attempt key and recipient
-- never change, yet their two indexes took an entry on each of those
-- updates: about a quarter of the server's work per sent message. Here
-- they are written once, when the row is inserted.

CREATE TABLE msg.message_lookup (
    attempt_key        UUID        PRIMARY KEY,
    tenant_id          TEXT        NOT NULL,
    recipient          TEXT        NOT NULL,
    business_key       TEXT        NOT NULL,
    message_id         BIGINT      NOT NULL,
    message_created_at TIMESTAMPTZ NOT NULL
);

COMMENT ON TABLE msg.message_lookup IS
    'Immutable identity of every msg.outbound_message row, for operator lookups by attempt key or recipient; '
    'written by the message table''s insert trigger, removed with the message partition.';

CREATE INDEX message_lookup_recipient_idx ON msg.message_lookup (recipient, tenant_id);

-- One set-based insert per INSERT statement (intake loads thousands of rows
-- in one), through the statement's transition table: a plain INSERT into the
-- message table cannot skip it.
CREATE FUNCTION msg.register_message_lookup() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO msg.message_lookup (attempt_key, tenant_id, recipient, business_key, message_id, message_created_at)
    SELECT attempt_key, tenant_id, recipient, business_key, id, created_at FROM new_rows;
    RETURN NULL;
END;
$$;

CREATE TRIGGER outbound_message_register_lookup
    AFTER INSERT ON msg.outbound_message
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION msg.register_message_lookup();

-- A deleted row's lookup goes with it.
CREATE FUNCTION msg.release_message_lookup() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM msg.message_lookup l USING old_rows o WHERE l.attempt_key = o.attempt_key;
    RETURN NULL;
END;
$$;

CREATE TRIGGER outbound_message_release_lookup
    AFTER DELETE ON msg.outbound_message
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION msg.release_message_lookup();

-- Retention (V7's function) removes a dropped partition's lookups as it
-- removes its registry entries.
CREATE OR REPLACE FUNCTION msg.drop_message_partitions_before(p_before timestamptz) RETURNS int
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
        DELETE FROM msg.message_lookup
         WHERE message_created_at >= lower_bound AND message_created_at < upper_bound;
        EXECUTE format('ALTER TABLE msg.outbound_message DETACH PARTITION %s', part.partition);
        EXECUTE format('DROP TABLE %s', part.partition);
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END;
$$;

INSERT INTO msg.message_lookup (attempt_key, tenant_id, recipient, business_key, message_id, message_created_at)
SELECT attempt_key, tenant_id, recipient, business_key, id, created_at FROM msg.outbound_message;

DROP INDEX msg.outbound_message_attempt_key_idx;
DROP INDEX msg.outbound_message_recipient_idx;
