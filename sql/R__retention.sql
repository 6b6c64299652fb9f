-- The live definition of the retention functions (upkeep calls them; each
-- returns how much went).
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a body here, never in a new V file; the
-- tables and types these functions use are made by V files.

-- The OTP sidecar's retention: verifications that expired before p_before (they
-- can no longer be used), and requests whose message is no longer waiting to be
-- sent (pending/claimed/sending) and was created before p_before. The foreign keys
-- block detaching a message partition while requests reference it, so this
-- runs before message partitions are dropped (upkeep calls it first). Returns
-- the verifications purged.
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
       AND m.state NOT IN ('pending', 'claimed', 'sending');
    RETURN purged;
END;
$$;

-- Retention for messages: detach and drop every monthly partition that ends
-- on or before p_before, together with its registry and lookup entries (the
-- keys of dropped rows are released). A partition that still has OTP sidecar
-- rows is skipped with a NOTICE (purge the sidecar first). Returns how many
-- were dropped.
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

-- Retention for receipts: drop every receipt partition whose month ends on or
-- before p_before; returns how many were dropped.
CREATE OR REPLACE FUNCTION dlr.drop_receipt_partitions_before(p_before timestamptz) RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    part record;
    dropped int := 0;
BEGIN
    PERFORM pg_advisory_xact_lock('dlr.delivery_receipts'::regclass::oid::bigint);
    FOR part IN SELECT * FROM msg.month_partitions('dlr.delivery_receipts', 'receipts') LOOP
        CONTINUE WHEN (part.month + interval '1 month')::timestamp AT TIME ZONE 'UTC' > p_before;
        EXECUTE format('ALTER TABLE dlr.delivery_receipts DETACH PARTITION %s', part.partition);
        EXECUTE format('DROP TABLE %s', part.partition);
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END;
$$;

-- Delete orphaned receipts resolved before p_before; unresolved ones are
-- never purged (they stay until a person acts).
CREATE OR REPLACE FUNCTION dlr.purge_resolved_orphans(p_before timestamptz) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    purged bigint;
BEGIN
    DELETE FROM dlr.orphaned_receipts WHERE resolved_at < p_before;
    GET DIAGNOSTICS purged = ROW_COUNT;
    RETURN purged;
END;
$$;

-- Drop the raw day-report loads of report dates before p_before; returns how
-- many.
CREATE OR REPLACE FUNCTION dlr.drop_day_report_partitions_before(p_before date) RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    part record;
    dropped int := 0;
BEGIN
    PERFORM pg_advisory_xact_lock('dlr.day_report_rows'::regclass::oid::bigint);
    FOR part IN
        SELECT i.inhrelid::regclass AS partition
          FROM pg_inherits i
          JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'dlr.day_report_rows'::regclass
           AND c.relname ~ '^day_report_rows_\d{8}$'
           AND to_date(right(c.relname, 8), 'YYYYMMDD') < p_before
    LOOP
        EXECUTE format('ALTER TABLE dlr.day_report_rows DETACH PARTITION %s', part.partition);
        EXECUTE format('DROP TABLE %s', part.partition);
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END;
$$;

-- Forget by-transaction reports of days before p_before; returns how many
-- transactions were dropped (their rows go by cascade).
CREATE OR REPLACE FUNCTION dlr.purge_txn_reports_before(p_before date) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    purged bigint;
BEGIN
    DELETE FROM dlr.txn_report_fetches WHERE report_date < p_before;
    GET DIAGNOSTICS purged = ROW_COUNT;
    RETURN purged;
END;
$$;

-- Drop intraday getDlr pulls of days before p_before, and their checkpoints
-- (the day report is the complete record once it is loaded); returns how many
-- rows went.
CREATE OR REPLACE FUNCTION dlr.purge_getdlr_rows_before(p_before date) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    purged bigint;
BEGIN
    DELETE FROM dlr.getdlr_rows WHERE report_date < p_before;
    GET DIAGNOSTICS purged = ROW_COUNT;
    DELETE FROM dlr.report_checkpoints WHERE report_kind = 'getdlr' AND report_date < p_before;
    RETURN purged;
END;
$$;
