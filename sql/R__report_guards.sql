-- The live definition of the report guards: a stored report never shrinks
-- (issue 17, docs/design.md#report-guards).
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a function or a trigger here, never in a
-- new V file. The tables are made by V files; each trigger is restated below
-- the function it fires, in its live form.
--
-- A provider's day report, its by-transaction reports and its day summary
-- only ever grow: statuses move forward, rows and units never go away. A
-- re-fetch that is smaller than what is stored (a fresh or wrong provider
-- account, a provider glitch) is refused here whatever path wrote it, unless
-- the transaction said it means it:
--     SELECT set_config('sms_pipeline.allow_shrink', 'on', true)
-- (named query report_guard_allow_shrink; `sms-pipeline materialize
-- --allow-shrink`, run config resources.report_guard.config.allow_shrink).
-- The application refuses first, with the same words; these triggers make
-- sure no other path gets around it. Refusals are check_violation with the
-- trigger's name as constraint name.

-- Whether the current transaction allowed a stored report to shrink.
CREATE OR REPLACE FUNCTION dlr.report_shrink_allowed() RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT COALESCE(current_setting('sms_pipeline.allow_shrink', true), '') = 'on'
$$;

-- The day report's checkpoint holds the rows of the load now in
-- dlr.day_report_rows: a new load with fewer rows, or forgetting the
-- checkpoint (the next load would then replace the day unchecked), is
-- refused. Other kinds (the intraday getDlr pull, purged by retention) are
-- not guarded.
CREATE OR REPLACE FUNCTION dlr.report_checkpoints_refuse_shrink() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF OLD.report_kind <> 'day' OR dlr.report_shrink_allowed() THEN
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'day report %: forgetting the checkpoint of % stored rows is refused (a day report only grows; set sms_pipeline.allow_shrink to on in the transaction to override)',
                        OLD.report_date, OLD.rows
              USING ERRCODE = 'check_violation', CONSTRAINT = 'report_checkpoints_never_shrink',
                    TABLE = 'report_checkpoints', SCHEMA = 'dlr';
    END IF;
    IF NEW.rows < OLD.rows THEN
        RAISE EXCEPTION 'day report %: % rows would replace the % stored; refused (a day report only grows; set sms_pipeline.allow_shrink to on in the transaction to override)',
                        OLD.report_date, NEW.rows, OLD.rows
              USING ERRCODE = 'check_violation', CONSTRAINT = 'report_checkpoints_never_shrink',
                    TABLE = 'report_checkpoints', SCHEMA = 'dlr';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER report_checkpoints_never_shrink
    BEFORE UPDATE OR DELETE ON dlr.report_checkpoints
    FOR EACH ROW EXECUTE FUNCTION dlr.report_checkpoints_refuse_shrink();

-- A by-transaction report stored with fewer rows than before. An empty answer
-- never gets here (the ingest keeps the earlier rows); retention deletes
-- whole transactions, which is not a shrink.
CREATE OR REPLACE FUNCTION dlr.txn_report_fetches_refuse_shrink() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF NEW.rows < OLD.rows AND NOT dlr.report_shrink_allowed() THEN
        RAISE EXCEPTION 'by-transaction report % of %: % rows would replace the % stored; refused (a by-transaction report only grows; set sms_pipeline.allow_shrink to on in the transaction to override)',
                        OLD.transaction_id, OLD.report_date, NEW.rows, OLD.rows
              USING ERRCODE = 'check_violation', CONSTRAINT = 'txn_report_fetches_never_shrink',
                    TABLE = 'txn_report_fetches', SCHEMA = 'dlr';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER txn_report_fetches_never_shrink
    BEFORE UPDATE ON dlr.txn_report_fetches
    FOR EACH ROW EXECUTE FUNCTION dlr.txn_report_fetches_refuse_shrink();

-- The provider summary of a day: its fetch marker holds the day's units and
-- sender rows; fewer of either, or forgetting the marker (its sender rows go
-- with it), is refused.
CREATE OR REPLACE FUNCTION dlr.provider_summary_fetch_refuse_shrink() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF dlr.report_shrink_allowed() THEN
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'provider summary %: forgetting the stored % units in % sender rows is refused (a day''s summary only grows; set sms_pipeline.allow_shrink to on in the transaction to override)',
                        OLD.day, OLD.units, OLD.sender_rows
              USING ERRCODE = 'check_violation', CONSTRAINT = 'provider_summary_fetch_never_shrinks',
                    TABLE = 'provider_summary_fetch', SCHEMA = 'dlr';
    END IF;
    IF NEW.units < OLD.units OR NEW.sender_rows < OLD.sender_rows THEN
        RAISE EXCEPTION 'provider summary %: % units in % sender rows would replace the % units in % stored; refused (a day''s summary only grows; set sms_pipeline.allow_shrink to on in the transaction to override)',
                        OLD.day, NEW.units, NEW.sender_rows, OLD.units, OLD.sender_rows
              USING ERRCODE = 'check_violation', CONSTRAINT = 'provider_summary_fetch_never_shrinks',
                    TABLE = 'provider_summary_fetch', SCHEMA = 'dlr';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER provider_summary_fetch_never_shrinks
    BEFORE UPDATE OR DELETE ON dlr.provider_summary_fetch
    FOR EACH ROW EXECUTE FUNCTION dlr.provider_summary_fetch_refuse_shrink();
