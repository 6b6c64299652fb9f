-- The live definition of the triggers of msg.message_lookup, the immutable
-- identity of every message row for operator lookups by attempt key or
-- recipient (written once, at insert, instead of indexing the message table).
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a function or a trigger here, never in a
-- new V file. The tables are made by V files; each trigger is restated below
-- the function it fires, in its live form (the V files that first created
-- it are history).

-- One set-based insert per INSERT statement (intake loads thousands of rows
-- in one), through the statement's transition table: a plain INSERT into the
-- message table cannot skip it.
CREATE OR REPLACE FUNCTION msg.register_message_lookup() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO msg.message_lookup (attempt_key, tenant_id, recipient, business_key, message_id, message_created_at)
    SELECT attempt_key, tenant_id, recipient, business_key, id, created_at FROM new_rows;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER outbound_message_register_lookup
    AFTER INSERT ON msg.outbound_message
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION msg.register_message_lookup();

-- A deleted row's lookup goes with it.
CREATE OR REPLACE FUNCTION msg.release_message_lookup() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM msg.message_lookup l USING old_rows o WHERE l.attempt_key = o.attempt_key;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER outbound_message_release_lookup
    AFTER DELETE ON msg.outbound_message
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION msg.release_message_lookup();
