-- The reconciliation writes msgIds onto a whole day of rows in one UPDATE
-- (up to a million). The row trigger of V5/V31 registered them one by one:
-- a PL/pgSQL call and an INSERT ... ON CONFLICT per row, the largest single
-- cost of that statement. For UPDATEs the registry is now kept by one
-- statement-level trigger over the transition tables: the entries of
-- replaced msgIds deleted, the new ones inserted, and a msgId already held
-- by another row refused, each as one set-based statement. Same guarantee,
-- same error (unique_violation on provider_message_id_registry_pkey);
-- inserts keep the row trigger (a new row rarely carries a msgId).

DROP TRIGGER outbound_message_register_provider_message_id ON msg.outbound_message;

CREATE TRIGGER outbound_message_register_provider_message_id
    BEFORE INSERT ON msg.outbound_message
    FOR EACH ROW EXECUTE FUNCTION msg.register_provider_message_id();

CREATE FUNCTION msg.register_updated_provider_message_ids() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    registered bigint;
    wanted bigint;
    holder_id bigint;
BEGIN
    -- Separate statements, not data-modifying CTEs: each must see the
    -- previous one's writes (a msgId moved from one row to another).
    -- EXECUTE: planned for this statement's transition tables. A cached
    -- plan, made when the function first ran on an UPDATE of a few rows,
    -- would join a million rows with a nested loop.
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

    -- Every new msgId registered: nothing can be held by another row. Only
    -- when some were already there is the holder looked up.
    EXECUTE $q$
    SELECT count(*)
      FROM new_rows n
      JOIN old_rows o ON o.id = n.id AND o.created_at = n.created_at
     WHERE n.provider_message_id IS NOT NULL
       AND n.provider_message_id IS DISTINCT FROM o.provider_message_id$q$ INTO wanted;
    IF registered < wanted THEN
        EXECUTE $q$
        SELECT r.message_id
          FROM new_rows n
          JOIN old_rows o ON o.id = n.id AND o.created_at = n.created_at
          JOIN msg.provider_message_id_registry r ON r.provider_message_id = n.provider_message_id
         WHERE n.provider_message_id IS DISTINCT FROM o.provider_message_id
           AND (r.message_id <> n.id OR r.message_created_at <> n.created_at)
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

CREATE TRIGGER outbound_message_register_updated_provider_message_ids
    AFTER UPDATE ON msg.outbound_message
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION msg.register_updated_provider_message_ids();
