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

-- What message retention would do with each monthly partition, and why
-- (docs/design.md#retention). verdict:
--   within_horizon   the month ends after p_before, or p_before is NULL (kept
--                    for ever); rows: the planner's estimate
--   otp_sidecar      OTP verifications or requests still reference it (the
--                    sidecar purge runs first; their foreign keys pin it)
--   marts_not_built  a mart (a table of schema marts) has no build of the day
--                    of some row's send attempt since that row last changed:
--                    unbuilt_mart and unbuilt_attempt_at name the first such
--   older_month_kept an older month is kept for the marts: such months go
--                    oldest first, so every mart day up to the floor
--                    (msg.message_retention_floor) has been built before its
--                    rows go, and no day after it ever loses one
--   drop             every mart keeps each row's day: the marts no longer read it
-- A send attempt is what the marts group a row by:
-- coalesce(msg.attempt_at(submitted_at, claimed_at, scheduled_for), created_at)
-- (int_messages__final_state; the function is V80's).
-- Read-only; msg.drop_message_partitions_before drops the 'drop' ones.
CREATE OR REPLACE FUNCTION msg.message_partition_retention(p_before timestamptz)
RETURNS TABLE (partition regclass, month date, message_rows bigint, rows_estimated boolean,
               last_attempt_at timestamptz, verdict text, unbuilt_mart text, unbuilt_attempt_at timestamptz)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    part record;
    lower_bound timestamptz;
    upper_bound timestamptz;
    older_kept boolean := false;
BEGIN
    FOR part IN SELECT * FROM msg.month_partitions('msg.outbound_message', 'outbound_message') LOOP
        partition := part.partition;
        month := part.month;
        lower_bound := part.month::timestamp AT TIME ZONE 'UTC';
        upper_bound := (part.month + interval '1 month')::timestamp AT TIME ZONE 'UTC';
        unbuilt_mart := NULL;
        unbuilt_attempt_at := NULL;
        last_attempt_at := NULL;
        IF p_before IS NULL OR upper_bound > p_before THEN
            -- no scan of a live month: the planner's estimate is enough to show
            SELECT nullif(greatest(c.reltuples, -1), -1)::bigint INTO message_rows
              FROM pg_class c WHERE c.oid = part.partition;
            rows_estimated := true;
            verdict := 'within_horizon';
            RETURN NEXT;
            CONTINUE;
        END IF;
        rows_estimated := false;
        EXECUTE format('SELECT count(*), max(coalesce(msg.attempt_at(submitted_at, claimed_at, scheduled_for), '
                       'created_at)) FROM %s', part.partition)
           INTO message_rows, last_attempt_at;
        IF older_kept THEN
            verdict := 'older_month_kept';
            RETURN NEXT;
            CONTINUE;
        END IF;
        EXECUTE format(
            $q$SELECT marts.tablename::text, m.attempt_at
                 FROM pg_tables AS marts
                 CROSS JOIN LATERAL (
                     SELECT coalesce(msg.attempt_at(r.submitted_at, r.claimed_at, r.scheduled_for), r.created_at)
                                AS attempt_at
                       FROM %s AS r
                      WHERE NOT EXISTS (
                                SELECT 1 FROM msg.mart_build_days b
                                 WHERE b.mart = marts.tablename
                                   AND b.starts_at <= coalesce(msg.attempt_at(r.submitted_at, r.claimed_at,
                                                                              r.scheduled_for), r.created_at)
                                   AND b.ends_at > coalesce(msg.attempt_at(r.submitted_at, r.claimed_at,
                                                                            r.scheduled_for), r.created_at)
                                   AND b.built_at >= r.updated_at)
                      ORDER BY 1
                      LIMIT 1) AS m
                WHERE marts.schemaname = 'marts'
                ORDER BY m.attempt_at, 1
                LIMIT 1$q$, part.partition)
           INTO unbuilt_mart, unbuilt_attempt_at;
        IF unbuilt_mart IS NOT NULL THEN
            verdict := 'marts_not_built';
            older_kept := true;
        ELSIF EXISTS (SELECT 1 FROM msg.otp_verification
                       WHERE message_created_at >= lower_bound AND message_created_at < upper_bound)
              OR EXISTS (SELECT 1 FROM msg.otp_request
                          WHERE message_created_at >= lower_bound AND message_created_at < upper_bound) THEN
            verdict := 'otp_sidecar';
        ELSE
            verdict := 'drop';
        END IF;
        RETURN NEXT;
    END LOOP;
END;
$$;

-- Retention for messages: detach and drop every monthly partition
-- msg.message_partition_retention says 'drop' for (it ends on or before
-- p_before, no OTP sidecar row references it, every mart keeps the days of
-- its rows), together with its registry and lookup entries (the keys of
-- dropped rows are released), and raise msg.message_retention_floor to its
-- last send attempt so that no mart day reading it is ever rebuilt. Every
-- other partition past p_before is kept with a NOTICE. Returns how many
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
    FOR part IN SELECT * FROM msg.message_partition_retention(p_before) WHERE verdict <> 'within_horizon' LOOP
        IF part.verdict <> 'drop' THEN
            RAISE NOTICE 'drop_message_partitions_before: % kept (%)', part.partition, part.verdict;
            CONTINUE;
        END IF;
        lower_bound := part.month::timestamp AT TIME ZONE 'UTC';
        upper_bound := (part.month + interval '1 month')::timestamp AT TIME ZONE 'UTC';
        DELETE FROM msg.business_key_registry
         WHERE message_created_at >= lower_bound AND message_created_at < upper_bound;
        DELETE FROM msg.provider_message_id_registry
         WHERE message_created_at >= lower_bound AND message_created_at < upper_bound;
        DELETE FROM msg.message_lookup
         WHERE message_created_at >= lower_bound AND message_created_at < upper_bound;
        IF part.last_attempt_at IS NOT NULL THEN
            INSERT INTO msg.message_retention_floor AS f (last_dropped_attempt_at)
            VALUES (part.last_attempt_at)
            ON CONFLICT (singleton) DO UPDATE
               SET last_dropped_attempt_at = greatest(f.last_dropped_attempt_at, excluded.last_dropped_attempt_at);
        END IF;
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
