-- The live definition of the business key registry's triggers.
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a function or a trigger here, never in a
-- new V file. The tables are made by V files; each trigger is restated below
-- the function it fires, in its live form (the V files that first created
-- it are history).
--
-- Global uniqueness across partitions: a unique index on a partitioned table
-- must contain created_at, so it could not stop one business key (or msgId)
-- from appearing in two months. Small unpartitioned registries, written by
-- triggers on the parent in the same transaction, hold one entry per key and
-- point at the row that owns it. A plain INSERT cannot bypass them. (The
-- msgId registry's own triggers are in R__msgid_registry.sql.)

-- Register NEW's business key. The key is free when unregistered, or when its
-- row was superseded (an operator replay: the new row takes the key over).
-- Otherwise: unique_violation, as a unique index would raise.
-- ON CONFLICT waits for a concurrent insert of the same key to finish, so of
-- two racing inserts exactly one commits.
CREATE OR REPLACE FUNCTION msg.register_business_key() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    holder msg.business_key_registry;
    holder_state msg.message_state;
BEGIN
    INSERT INTO msg.business_key_registry (tenant_id, business_key, message_id, message_created_at)
    VALUES (NEW.tenant_id, NEW.business_key, NEW.id, NEW.created_at)
    ON CONFLICT (tenant_id, business_key) DO NOTHING;
    IF FOUND THEN
        RETURN NEW;
    END IF;

    SELECT * INTO holder
      FROM msg.business_key_registry
     WHERE tenant_id = NEW.tenant_id AND business_key = NEW.business_key
       FOR UPDATE;
    SELECT m.state INTO holder_state
      FROM msg.outbound_message m
     WHERE m.id = holder.message_id AND m.created_at = holder.message_created_at;
    IF holder_state IS DISTINCT FROM 'superseded' THEN
        RAISE EXCEPTION 'duplicate business key for tenant %: already held by msg.outbound_message id=%',
                        NEW.tenant_id, holder.message_id
              USING ERRCODE = 'unique_violation', CONSTRAINT = 'business_key_registry_pkey',
                    TABLE = 'business_key_registry', SCHEMA = 'msg';
    END IF;
    UPDATE msg.business_key_registry
       SET message_id = NEW.id, message_created_at = NEW.created_at
     WHERE tenant_id = NEW.tenant_id AND business_key = NEW.business_key;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER outbound_message_register_business_key
    BEFORE INSERT ON msg.outbound_message
    FOR EACH ROW EXECUTE FUNCTION msg.register_business_key();

-- A deleted row gives its keys back: its business key and its msgId.
CREATE OR REPLACE FUNCTION msg.release_message_keys() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM msg.business_key_registry
     WHERE tenant_id = OLD.tenant_id AND business_key = OLD.business_key
       AND message_id = OLD.id AND message_created_at = OLD.created_at;
    IF OLD.provider_message_id IS NOT NULL THEN
        DELETE FROM msg.provider_message_id_registry
         WHERE provider_message_id = OLD.provider_message_id
           AND message_id = OLD.id AND message_created_at = OLD.created_at;
    END IF;
    RETURN OLD;
END;
$$;

CREATE OR REPLACE TRIGGER outbound_message_release_keys
    AFTER DELETE ON msg.outbound_message
    FOR EACH ROW EXECUTE FUNCTION msg.release_message_keys();
