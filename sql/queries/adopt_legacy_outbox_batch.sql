-- LEGACY DATABASE (adopt sync). The next batch of recorded sends: the legacy
-- rows of the oldest `batch` outbox entries of the table, each with its
-- latest entry (a row written twice is adopted as last recorded).
-- Parameters: table (the legacy table's name as SQL text, quoted), batch.
WITH head AS (
    SELECT legacy_id
      FROM sms_pipeline_adopt_outbox
     WHERE legacy_table = to_regclass(%(table)s)
     ORDER BY seq
     LIMIT %(batch)s
)
SELECT DISTINCT ON (o.legacy_id)
       o.seq, o.legacy_id, o.phone, o.message, o.sent, o.response, o.created_at, o.event
  FROM sms_pipeline_adopt_outbox o
 WHERE o.legacy_table = to_regclass(%(table)s)
   AND o.legacy_id IN (SELECT legacy_id FROM head)
 ORDER BY o.legacy_id, o.seq DESC
