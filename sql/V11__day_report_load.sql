-- The raw load of the provider's day report (one zip per provider-local day)
-- and the fetch checkpoints. Every field is kept as the provider's text (ids
-- above 2^63, "0" placeholders and all: this is the evidence as received);
-- the two times are also parsed to UTC instants at load. The Message column
-- may hold an OTP code, so only its SHA-256 is stored.
--
-- One partition per report date (dlr.day_report_rows_YYYYMMDD, made by
-- dlr.ensure_day_report_partition), so replacing a day's load is TRUNCATE of
-- that partition and COPY, in one transaction, at any size.

CREATE TABLE dlr.day_report_rows (
    report_date         DATE        NOT NULL,   -- the provider-local day asked for
    line_no             INTEGER     NOT NULL,   -- data row number in the CSV
    msg_id              TEXT,
    transaction_id      TEXT,
    mobile              TEXT,
    sender_name         TEXT,
    message_sha256      TEXT,
    msg_type            TEXT,
    submit_time_local   TEXT,
    delivery_time_local TEXT,
    provider_submit_at  TIMESTAMPTZ,
    provider_done_at    TIMESTAMPTZ,
    status              TEXT,
    cause               TEXT,
    error_code          TEXT,
    units               TEXT,
    PRIMARY KEY (report_date, line_no),
    CONSTRAINT day_report_rows_message_sha256_check CHECK (message_sha256 ~ '^[0-9a-f]{64}$')
) PARTITION BY LIST (report_date);

COMMENT ON TABLE dlr.day_report_rows IS
    'Raw day-report rows, message text only as message_sha256. Partitions dlr.day_report_rows_YYYYMMDD '
    'from dlr.ensure_day_report_partition(date).';

-- The partition for report date p_date, created if missing; returns its name
-- (schema-qualified, ready for TRUNCATE / COPY).
CREATE FUNCTION dlr.ensure_day_report_partition(p_date date) RETURNS text
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

-- Retention: drop the raw loads of report dates before p_before; returns how many.
CREATE FUNCTION dlr.drop_day_report_partitions_before(p_before date) RETURNS int
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

-- One row per report fetched and loaded. A download whose checksum equals
-- the loaded one is a no-op; loaded_at NULL = fetched but not (yet) loaded.
CREATE TABLE dlr.report_checkpoints (
    report_kind     TEXT        NOT NULL,   -- e.g. 'day'
    report_date     DATE        NOT NULL,
    checksum        TEXT        NOT NULL,   -- of the downloaded archive
    rows            BIGINT      NOT NULL,
    bytes           BIGINT      NOT NULL,
    fetched_at      TIMESTAMPTZ NOT NULL,
    loaded_at       TIMESTAMPTZ,
    PRIMARY KEY (report_kind, report_date),
    CONSTRAINT report_checkpoints_counts_check CHECK (rows >= 0 AND bytes >= 0),
    CONSTRAINT report_checkpoints_checksum_check CHECK (checksum <> '')
);
