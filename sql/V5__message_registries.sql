-- Global uniqueness across partitions. A unique index on a partitioned table
-- must contain created_at, so it could not stop one business key (or msgId)
-- from appearing in two months. Two small unpartitioned registries, written by
-- triggers on the parent in the same transaction, hold one entry per key and
-- point at the row that owns it. A plain INSERT cannot bypass them.

CREATE TABLE msg.business_key_registry (
    tenant_id           TEXT        NOT NULL,
    business_key        TEXT        NOT NULL,
    message_id          BIGINT      NOT NULL,
    message_created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, business_key)
);
-- Retention removes a dropped partition's entries by range.
CREATE INDEX business_key_registry_message_created_at_idx
    ON msg.business_key_registry (message_created_at);

CREATE TABLE msg.provider_message_id_registry (
    provider_message_id TEXT        PRIMARY KEY,
    message_id          BIGINT      NOT NULL,
    message_created_at  TIMESTAMPTZ NOT NULL,
    CONSTRAINT provider_message_id_registry_clean CHECK (msg.is_clean_provider_id(provider_message_id))
);
CREATE INDEX provider_message_id_registry_message_created_at_idx
    ON msg.provider_message_id_registry (message_created_at);


-- Register NEW's business key. The key is free when unregistered, or when its
-- row was superseded (an operator replay: the new row takes the key over).
-- Otherwise: unique_violation, as a unique index would raise.
-- ON CONFLICT waits for a concurrent insert of the same key to finish, so of
-- two racing inserts exactly one commits.
CREATE FUNCTION msg.register_business_key() RETURNS trigger
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

CREATE TRIGGER outbound_message_register_business_key
    BEFORE INSERT ON msg.outbound_message
    FOR EACH ROW EXECUTE FUNCTION msg.register_business_key();


-- Register NEW's msgId when it is set or changed; a msgId is one recipient's,
-- so it may belong to one row only.
CREATE FUNCTION msg.register_provider_message_id() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    holder msg.provider_message_id_registry;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.provider_message_id IS NOT DISTINCT FROM OLD.provider_message_id THEN
            RETURN NEW;
        END IF;
        DELETE FROM msg.provider_message_id_registry
         WHERE provider_message_id = OLD.provider_message_id
           AND message_id = OLD.id AND message_created_at = OLD.created_at;
    END IF;
    IF NEW.provider_message_id IS NULL THEN
        RETURN NEW;
    END IF;

    INSERT INTO msg.provider_message_id_registry (provider_message_id, message_id, message_created_at)
    VALUES (NEW.provider_message_id, NEW.id, NEW.created_at)
    ON CONFLICT (provider_message_id) DO NOTHING;
    IF NOT FOUND THEN
        SELECT * INTO holder FROM msg.provider_message_id_registry
         WHERE provider_message_id = NEW.provider_message_id;
        IF holder.message_id <> NEW.id OR holder.message_created_at <> NEW.created_at THEN
            RAISE EXCEPTION 'duplicate provider_message_id: already held by msg.outbound_message id=%',
                            holder.message_id
                  USING ERRCODE = 'unique_violation', CONSTRAINT = 'provider_message_id_registry_pkey',
                        TABLE = 'provider_message_id_registry', SCHEMA = 'msg';
        END IF;
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER outbound_message_register_provider_message_id
    BEFORE INSERT OR UPDATE OF provider_message_id ON msg.outbound_message
    FOR EACH ROW EXECUTE FUNCTION msg.register_provider_message_id();


-- A deleted row gives its keys back.
CREATE FUNCTION msg.release_message_keys() RETURNS trigger
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

CREATE TRIGGER outbound_message_release_keys
    AFTER DELETE ON msg.outbound_message
    FOR EACH ROW EXECUTE FUNCTION msg.release_message_keys();
