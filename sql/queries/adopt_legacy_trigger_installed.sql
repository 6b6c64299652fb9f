-- LEGACY DATABASE (adopt cutover). Whether the dual-write trigger is still
-- on the legacy table.
-- Parameters: table (the legacy table's name as SQL text, quoted).
SELECT EXISTS (SELECT 1 FROM pg_trigger
                WHERE tgrelid = to_regclass(%(table)s) AND tgname = 'sms_pipeline_adopt_capture')
