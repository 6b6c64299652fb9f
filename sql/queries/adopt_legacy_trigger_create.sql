-- LEGACY DATABASE (adopt install-trigger). The dual-write trigger on the
-- legacy table; it fires only for inserts and for updates that name the
-- sent or response column, after the row is written.
-- Identifiers: table (the legacy table), sent and response (its columns),
--   columns (the trigger arguments: the legacy column names as literals, in
--   the order sms_pipeline_adopt_capture reads them).
-- Parameters: none.
CREATE TRIGGER sms_pipeline_adopt_capture
    AFTER INSERT OR UPDATE OF {sent}, {response} ON {table}
    FOR EACH ROW EXECUTE FUNCTION sms_pipeline_adopt_capture({columns})
