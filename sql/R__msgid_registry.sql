-- The live definition of the provider msgId registry's triggers.
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a function or a trigger here, never in a
-- new V file. The tables are made by V files; each trigger is restated below
-- the function it fires, in its live form (the V files that first created
-- it are history).
--
-- A msgId is one recipient's, so it may belong to one row only: the
-- registry msg.provider_message_id_registry holds one entry per msgId,
-- pointing at its row. Inserts register through a row trigger (a new row
-- rarely carries a msgId); updates, which write msgIds onto a whole day of
-- rows in one statement (up to a million), through one statement-level
-- trigger over the transition tables. Both refuse a msgId held by another
-- row with the same error: unique_violation on
-- provider_message_id_registry_pkey.

-- Register NEW's msgId when it is set or changed. The old msgId's entry is
-- only looked up when there was one: a lookup that can match nothing, repeated
-- for every row of a big UPDATE against a growing registry, was quadratic.
-- Fired on INSERT only: updates go through the statement-level trigger below.
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

CREATE OR REPLACE TRIGGER outbound_message_register_provider_message_id
    BEFORE INSERT ON msg.outbound_message
    FOR EACH ROW EXECUTE FUNCTION msg.register_provider_message_id();

-- The registry kept for an UPDATE statement as a whole: the entries of
-- replaced msgIds deleted, the new ones inserted, and a msgId already held by
-- another row refused, each as one set-based statement. Most UPDATEs (the
-- worker's claims and outcomes, upkeep) touch rows without a msgId before or
-- after and leave at once: a column list (AFTER UPDATE OF
-- provider_message_id) cannot be combined with transition tables, so that
-- test lives here.
CREATE OR REPLACE FUNCTION msg.register_updated_provider_message_ids() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    registered bigint;
    wanted bigint;
    holder_id bigint;
    had_msgids boolean;
    register_new text;
BEGIN
    -- Most UPDATEs (the worker's claims and outcomes, upkeep) touch rows
    -- that have no msgId before or after: nothing for the registry to do.
    -- Two scans of the transition tables instead of three planned joins.
    had_msgids := EXISTS (SELECT FROM old_rows WHERE provider_message_id IS NOT NULL);
    IF NOT had_msgids AND NOT EXISTS (SELECT FROM new_rows WHERE provider_message_id IS NOT NULL) THEN
        RETURN NULL;
    END IF;

    -- EXECUTE: planned for this statement's transition tables. A cached
    -- plan, made when the function first ran on an UPDATE of a few rows,
    -- would join a million rows with a nested loop.
    IF NOT had_msgids THEN
        -- The reconciliation's case: msgIds written onto rows that had none.
        -- Every msgId in new_rows is new to its row, so the old rows need
        -- not be joined (at a million rows that join was most of the
        -- trigger's time).
        -- First a plain INSERT: without a conflict it registers them all,
        -- and it skips ON CONFLICT's extra probe of the key per row.
        -- Any unique_violation undoes it (the block's subtransaction) and
        -- the careful path below runs instead: it names the holder, and
        -- it lets through a msgId already registered to its own row.
        register_new := $q$
        INSERT INTO msg.provider_message_id_registry (provider_message_id, message_id, message_created_at)
        SELECT provider_message_id, id, created_at
          FROM new_rows
         WHERE provider_message_id IS NOT NULL$q$;
        BEGIN
            EXECUTE register_new;
            RETURN NULL;
        EXCEPTION WHEN unique_violation THEN
            NULL;
        END;
        EXECUTE register_new || ' ON CONFLICT (provider_message_id) DO NOTHING';
        GET DIAGNOSTICS registered = ROW_COUNT;
        EXECUTE $q$SELECT count(*) FROM new_rows WHERE provider_message_id IS NOT NULL$q$ INTO wanted;
    ELSE
        -- Separate statements, not data-modifying CTEs: each must see the
        -- previous one's writes (a msgId moved from one row to another).
        EXECUTE $q$
        DELETE FROM msg.provider_message_id_registry r
         USING old_rows o
          JOIN new_rows n ON n.id = o.id AND n.created_at = o.created_at
         WHERE o.provider_message_id IS NOT NULL
           AND n.provider_message_id IS DISTINCT FROM o.provider_message_id
           AND r.provider_message_id = o.provider_message_id
           AND r.message_id = o.id AND r.message_created_at = o.created_at$q$;

        EXECUTE $q$
        INSERT INTO msg.provider_message_id_registry (provider_message_id, message_id, message_created_at)
        SELECT n.provider_message_id, n.id, n.created_at
          FROM new_rows n
          JOIN old_rows o ON o.id = n.id AND o.created_at = n.created_at
         WHERE n.provider_message_id IS NOT NULL
           AND n.provider_message_id IS DISTINCT FROM o.provider_message_id
        ON CONFLICT (provider_message_id) DO NOTHING$q$;
        GET DIAGNOSTICS registered = ROW_COUNT;

        EXECUTE $q$
        SELECT count(*)
          FROM new_rows n
          JOIN old_rows o ON o.id = n.id AND o.created_at = n.created_at
         WHERE n.provider_message_id IS NOT NULL
           AND n.provider_message_id IS DISTINCT FROM o.provider_message_id$q$ INTO wanted;
    END IF;

    -- Every new msgId registered: nothing can be held by another row. Only
    -- when some were already there is the holder looked up (a msgId written
    -- again onto its own row is registered to it already, and passes).
    IF registered < wanted THEN
        EXECUTE $q$
        SELECT r.message_id
          FROM new_rows n
          JOIN msg.provider_message_id_registry r ON r.provider_message_id = n.provider_message_id
         WHERE r.message_id <> n.id OR r.message_created_at <> n.created_at
         LIMIT 1$q$ INTO holder_id;
        IF holder_id IS NOT NULL THEN
            RAISE EXCEPTION 'duplicate provider_message_id: already held by msg.outbound_message id=%', holder_id
                  USING ERRCODE = 'unique_violation', CONSTRAINT = 'provider_message_id_registry_pkey',
                        TABLE = 'provider_message_id_registry', SCHEMA = 'msg';
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER outbound_message_register_updated_provider_message_ids
    AFTER UPDATE ON msg.outbound_message
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION msg.register_updated_provider_message_ids();
