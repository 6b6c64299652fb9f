-- Facts about this installation, kept in the database it runs on: one row.
--
-- partition_start is the first day partition when SMS_PIPELINE_PARTITION_START
-- is unset (docs/design.md#first-partition-day). A fixed default date made a
-- new installation show months of "missing" partitions before its first real
-- day; the month of its first upgrade is where its data can start. It is
-- recorded once, so partitions stay the same from one start to the next, and
-- it is the first of a month so that the day of the upgrade does not matter.
-- It may be lowered (to backfill older days), never raised nor deleted: the
-- guard is in R__installation.sql.
CREATE TABLE public.installation (
    one_row         BOOLEAN NOT NULL DEFAULT true
                    CONSTRAINT installation_one_row PRIMARY KEY
                    CONSTRAINT installation_one_row_only CHECK (one_row),
    partition_start DATE NOT NULL
                    CONSTRAINT installation_partition_start_first_of_month
                    CHECK (partition_start = date_trunc('month', partition_start)::date)
);

COMMENT ON TABLE public.installation IS
    'This installation''s own facts: exactly one row, never deleted (trigger installation_row_guard).';
COMMENT ON COLUMN public.installation.partition_start IS
    'First day partition when SMS_PIPELINE_PARTITION_START is unset: the first of the month (UTC) of the '
    'first upgrade; may be lowered, never raised (trigger installation_row_guard).';

-- The first upgrade is the earliest migration recorded: on a database that
-- predates this file, its first upgrade long ago; on a new one, this very
-- upgrade (V1 was recorded moments ago). now() only if nothing is recorded.
INSERT INTO public.installation (partition_start)
SELECT date_trunc('month', COALESCE(min(applied_at), now()) AT TIME ZONE 'UTC')::date
  FROM public.schema_migrations;
