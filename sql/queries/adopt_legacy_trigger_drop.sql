-- LEGACY DATABASE (adopt install-trigger / remove-trigger). Removes the
-- dual-write trigger from the legacy table; the outbox stays until drained.
-- Identifiers: table (the legacy table).
-- Parameters: none.
DROP TRIGGER IF EXISTS sms_pipeline_adopt_capture ON {table}
