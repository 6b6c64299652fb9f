-- The live definition of the installation guard (docs/design.md#first-partition-day).
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). The table is made by V69__installation.sql.
--
-- public.installation has one row; its partition_start is where the day
-- partitions begin when SMS_PIPELINE_PARTITION_START is unset. Raising it
-- would hide days already loaded from Dagster, and deleting the row would
-- leave every code location unable to start: both are refused, whoever
-- writes. Lowering it (a backfill of older days) is allowed. Refusals are
-- check_violation with the trigger's name as constraint name.

CREATE OR REPLACE FUNCTION public.installation_refuse_change() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'TRUNCATE') THEN
        RAISE EXCEPTION 'public.installation: removing the installation row is refused (it records where the day partitions start; lower partition_start instead)'
              USING ERRCODE = 'check_violation', CONSTRAINT = TG_NAME,
                    TABLE = 'installation', SCHEMA = 'public';
    END IF;
    IF NEW.partition_start > OLD.partition_start THEN
        RAISE EXCEPTION 'public.installation: partition_start % would replace %; refused (partition_start is only ever lowered: raising it would hide days already loaded)',
                        NEW.partition_start, OLD.partition_start
              USING ERRCODE = 'check_violation', CONSTRAINT = TG_NAME,
                    TABLE = 'installation', SCHEMA = 'public';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER installation_row_guard
    BEFORE UPDATE OR DELETE ON public.installation
    FOR EACH ROW EXECUTE FUNCTION public.installation_refuse_change();

-- TRUNCATE fires no row trigger: the statement is refused on its own.
CREATE OR REPLACE TRIGGER installation_never_truncated
    BEFORE TRUNCATE ON public.installation
    FOR EACH STATEMENT EXECUTE FUNCTION public.installation_refuse_change();
