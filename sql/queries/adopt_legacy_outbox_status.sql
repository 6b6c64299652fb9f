-- LEGACY DATABASE (adopt cutover). The table's entries still in the outbox
-- and the latest time one was recorded.
-- Parameters: table (the legacy table's name as SQL text, quoted).
SELECT count(*) AS waiting, max(recorded_at) AS last_recorded_at
  FROM sms_pipeline_adopt_outbox
 WHERE legacy_table = to_regclass(%(table)s)
