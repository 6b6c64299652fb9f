-- The statement-level msgId registry trigger of V60 runs after every UPDATE
-- of msg.outbound_message, and its three EXECUTEd statements are planned on
-- each run: a few milliseconds per worker claim or outcome of 500 rows,
-- which never carry a msgId. Same function, with an early exit when no row
-- of the statement has a msgId before or after it. (A column list,
-- AFTER UPDATE OF provider_message_id, cannot be combined with transition
-- tables, so the test lives in the function.)

CREATE OR REPLACE FUNCTION msg.register_updated_provider_message_ids() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    registered bigint;
    wanted bigint;
    holder_id bigint;
BEGIN
    -- Most UPDATEs (the worker's claims and outcomes, upkeep) touch rows
    -- that have no msgId before or after: nothing for the registry to do.
    -- Two scans of the transition tables instead of three planned joins.
    IF NOT EXISTS (SELECT FROM new_rows WHERE provider_message_id IS NOT NULL)
       AND NOT EXISTS (SELECT FROM old_rows WHERE provider_message_id IS NOT NULL) THEN
        RETURN NULL;
    END IF;

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
