-- The live definition of the functions that create partitions: monthly ones
-- (UTC) for messages and receipts, one per report date for day reports.
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a body here, never in a new V file; the
-- tables and types these functions use are made by V files.

-- Create the monthly partition <schema of parent>.<prefix>_YYYY_MM covering
-- p_month (a first-of-month date, UTC) if it is missing; true when created.
-- p_fillfactor: the partition's fillfactor (NULL: Postgres's default).
-- Works for a DATE or TIMESTAMPTZ partition key (timestamptz bounds are
-- written with an explicit +00 so the session time zone cannot shift them).
CREATE OR REPLACE FUNCTION msg.create_month_partition(
    p_parent regclass, p_prefix text, p_month date, p_fillfactor int DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    parent_schema text;
    partition_name text := format('%s_%s', p_prefix, to_char(p_month, 'YYYY_MM'));
    key_type regtype;
    lower_bound text;
    upper_bound text;
BEGIN
    IF p_month <> date_trunc('month', p_month)::date THEN
        RAISE EXCEPTION 'create_month_partition: % is not the first day of a month', p_month;
    END IF;
    SELECT n.nspname, a.atttypid::regtype
      INTO parent_schema, key_type
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_partitioned_table pt ON pt.partrelid = c.oid
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = pt.partattrs[0]
     WHERE c.oid = p_parent;
    IF to_regclass(format('%I.%I', parent_schema, partition_name)) IS NOT NULL THEN
        RETURN false;
    END IF;
    IF key_type = 'timestamp with time zone'::regtype THEN
        lower_bound := p_month::text || ' 00:00:00+00';
        upper_bound := (p_month + interval '1 month')::date::text || ' 00:00:00+00';
    ELSIF key_type = 'date'::regtype THEN
        lower_bound := p_month::text;
        upper_bound := (p_month + interval '1 month')::date::text;
    ELSE
        RAISE EXCEPTION 'create_month_partition: unsupported partition key type % on %', key_type, p_parent;
    END IF;
    EXECUTE format('CREATE TABLE %I.%I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
                   parent_schema, partition_name, p_parent, lower_bound, upper_bound);
    IF p_fillfactor IS NOT NULL THEN
        EXECUTE format('ALTER TABLE %I.%I SET (fillfactor = %s)', parent_schema, partition_name, p_fillfactor);
    END IF;
    RETURN true;
END;
$$;

-- Monthly partitions from p_from's month (UTC) through p_months_ahead months
-- later; returns how many were created (0 when all exist). Serialised per
-- parent so two upkeep runs at once cannot race on CREATE.
CREATE OR REPLACE FUNCTION msg.ensure_month_partitions(
    p_parent regclass, p_prefix text, p_from timestamptz, p_months_ahead int, p_fillfactor int DEFAULT NULL)
RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    first_month date := date_trunc('month', p_from AT TIME ZONE 'UTC')::date;
    created int := 0;
BEGIN
    IF p_months_ahead < 0 THEN
        RAISE EXCEPTION 'ensure_month_partitions: months ahead must be >= 0, got %', p_months_ahead;
    END IF;
    PERFORM pg_advisory_xact_lock(p_parent::oid::bigint);
    FOR i IN 0 .. p_months_ahead LOOP
        IF msg.create_month_partition(p_parent, p_prefix, (first_month + make_interval(months => i))::date,
                                      p_fillfactor) THEN
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END;
$$;

-- Month partitions of p_parent named <prefix>_YYYY_MM, with their UTC month.
CREATE OR REPLACE FUNCTION msg.month_partitions(p_parent regclass, p_prefix text)
RETURNS TABLE (partition regclass, month date)
LANGUAGE sql STABLE
AS $$
    SELECT i.inhrelid::regclass,
           to_date(substring(c.relname FROM '_(\d{4}_\d{2})$'), 'YYYY_MM')
      FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = p_parent
       AND c.relname ~ ('^' || p_prefix || '_\d{4}_\d{2}$')
     ORDER BY 2
$$;

-- Message partitions msg.outbound_message_YYYY_MM from p_from's month (UTC)
-- through p_months_ahead months later; returns how many were created. Two
-- thirds of each page stay free for the rows' next versions (V73: the
-- sending step stays on the page).
CREATE OR REPLACE FUNCTION msg.ensure_partitions(p_from timestamptz, p_months_ahead int DEFAULT 2)
RETURNS int
LANGUAGE sql
AS $$
    SELECT msg.ensure_month_partitions('msg.outbound_message', 'outbound_message', p_from, p_months_ahead, 33)
$$;

-- The partition key of dlr.delivery_receipts: the month (UTC) of the
-- provider's submit time, the same for every receipt of one message (the
-- submit time itself differs in precision between sources). The table's
-- delivery_receipts_submit_month_check holds submit_month to it.
CREATE OR REPLACE FUNCTION dlr.submit_month(p_submit_at timestamptz) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN date_trunc('month', p_submit_at AT TIME ZONE 'UTC')::date;

-- Monthly receipt partitions dlr.receipts_YYYY_MM from p_from's month (UTC)
-- through p_months_ahead months later; returns how many were created. The
-- ingest calls it with the day it loads (backfills reach past months).
CREATE OR REPLACE FUNCTION dlr.ensure_partitions(p_from timestamptz, p_months_ahead int DEFAULT 2)
RETURNS int
LANGUAGE sql
AS $$
    SELECT msg.ensure_month_partitions('dlr.delivery_receipts', 'receipts', p_from, p_months_ahead)
$$;

-- The partition of dlr.day_report_rows for report date p_date
-- (dlr.day_report_rows_YYYYMMDD), created if missing; returns its name
-- (schema-qualified, quoted as needed, ready for TRUNCATE / COPY).
CREATE OR REPLACE FUNCTION dlr.ensure_day_report_partition(p_date date) RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    partition_name text := 'day_report_rows_' || to_char(p_date, 'YYYYMMDD');
BEGIN
    PERFORM pg_advisory_xact_lock('dlr.day_report_rows'::regclass::oid::bigint);
    IF to_regclass(format('dlr.%I', partition_name)) IS NULL THEN
        EXECUTE format('CREATE TABLE dlr.%I PARTITION OF dlr.day_report_rows FOR VALUES IN (%L)',
                       partition_name, p_date);
    END IF;
    RETURN format('dlr.%I', partition_name);
END;
$$;
