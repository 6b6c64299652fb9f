-- The reconciliation writes msgIds onto a whole day of rows in one UPDATE.
-- For each row the registry trigger of V5 deleted the entry of the row's
-- old msgId, also when there was none (OLD.provider_message_id NULL): a
-- lookup that can match nothing, planned once while the registry was still
-- small (a sequential scan) and then repeated against a registry growing
-- with every row of the same statement: quadratic on a big day (100,000
-- rows took minutes). Same function, with that lookup only for a real old id.

CREATE OR REPLACE FUNCTION msg.register_provider_message_id() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    holder msg.provider_message_id_registry;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.provider_message_id IS NOT DISTINCT FROM OLD.provider_message_id THEN
            RETURN NEW;
        END IF;
        IF OLD.provider_message_id IS NOT NULL THEN
            DELETE FROM msg.provider_message_id_registry
             WHERE provider_message_id = OLD.provider_message_id
               AND message_id = OLD.id AND message_created_at = OLD.created_at;
        END IF;
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
