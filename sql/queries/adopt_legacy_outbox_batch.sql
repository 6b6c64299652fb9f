-- LEGACY DATABASE (adopt sync). The next batch of recorded sends: every
-- outbox entry of the legacy rows the oldest `batch` entries of the table
-- belong to, by legacy id then seq. A row recorded more than once comes
-- with all its entries: sync adopts one of them and checks the others'
-- transaction ids against what was adopted (an upgrade of an `unknown` row,
-- or a send made again, reported).
-- Parameters: table (the legacy table's name as SQL text, quoted), batch.
WITH head AS (
    SELECT legacy_id
      FROM sms_pipeline_adopt_outbox
     WHERE legacy_table = to_regclass(%(table)s)
     ORDER BY seq
     LIMIT %(batch)s
)
SELECT o.seq, o.legacy_id, o.phone, o.message, o.sent, o.response, o.created_at, o.event
  FROM sms_pipeline_adopt_outbox o
 WHERE o.legacy_table = to_regclass(%(table)s)
   AND o.legacy_id IN (SELECT legacy_id FROM head)
 ORDER BY o.legacy_id, o.seq
