-- LEGACY DATABASE (adopt install-trigger). Sync reads the latest entry of
-- each legacy row and deletes what it adopted, by table and legacy id.
-- Parameters: none.
CREATE INDEX IF NOT EXISTS sms_pipeline_adopt_outbox_row
    ON sms_pipeline_adopt_outbox (legacy_table, legacy_id, seq)
