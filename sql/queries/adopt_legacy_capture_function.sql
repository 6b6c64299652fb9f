-- LEGACY DATABASE (adopt install-trigger). The dual-write trigger function:
-- copies a legacy row into sms_pipeline_adopt_outbox when its send may be
-- recorded: inserted, or updated so that sent or response changes, while
-- sent is true or a response is stored (sent false with a usable id counts
-- as sent too: sync judges it, as sms_pipeline.adopt.responses.attempted
-- does, and skips what was not sent). One function serves
-- any table: the trigger's arguments name the legacy columns (id, phone,
-- message, sent, response, created_at, and the event column or ''), read
-- from the row as JSON, so the function holds no identifier of the legacy
-- schema.
-- It runs as its owner (the installer: the old sender's role needs no right
-- on the outbox) with the installer's search_path (the old sender's cannot
-- redirect the copy). It never fails the old sender's statement: a row it
-- cannot copy raises a warning and goes unrecorded; adopt verify shows its
-- day as different, and running adopt backfill again adopts it (a completed
-- backfill leaves no checkpoint, so the next run reads the whole table).
-- The EXCEPTION block costs one subtransaction per recorded send (an xid
-- and a subtransaction slot in the old sender's transaction).
-- Parameters: none.
CREATE OR REPLACE FUNCTION sms_pipeline_adopt_capture() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
DECLARE
    new_row jsonb;
    old_row jsonb;
    was_sent boolean;
BEGIN
    -- Assigned here, not in DECLARE: only the body's errors reach the handler below.
    new_row := to_jsonb(NEW);
    was_sent := (new_row ->> TG_ARGV[3])::boolean;
    IF NOT (coalesce(was_sent, false) OR btrim(coalesce(new_row ->> TG_ARGV[4], '')) <> '') THEN
        RETURN NULL;  -- not sent (yet), nothing answered
    END IF;
    IF TG_OP = 'UPDATE' THEN
        old_row := to_jsonb(OLD);
        IF old_row -> TG_ARGV[3] IS NOT DISTINCT FROM new_row -> TG_ARGV[3]
           AND old_row -> TG_ARGV[4] IS NOT DISTINCT FROM new_row -> TG_ARGV[4] THEN
            RETURN NULL;  -- nothing about the send changed
        END IF;
    END IF;
    INSERT INTO sms_pipeline_adopt_outbox
        (legacy_table, legacy_id, phone, message, sent, response, created_at, event)
    VALUES (TG_RELID,
            (new_row ->> TG_ARGV[0])::bigint,
            new_row ->> TG_ARGV[1],
            new_row ->> TG_ARGV[2],
            was_sent,
            new_row ->> TG_ARGV[4],
            (new_row ->> TG_ARGV[5])::timestamptz,
            CASE WHEN TG_ARGV[6] <> '' THEN new_row ->> TG_ARGV[6] END);
    RETURN NULL;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'sms_pipeline_adopt_capture: send not recorded in sms_pipeline_adopt_outbox: %%', SQLERRM;
    RETURN NULL;
END
$function$
