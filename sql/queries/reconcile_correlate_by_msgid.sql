-- Pass 1: by msgId, through the global registry (one row per msgId, and a
-- row holds one msgId, so a match here is never ambiguous).
-- Creates the work table reconcile_work.reconcile_pairs_by_msgid: candidate (msgId,
-- message row) pairs. Each pass writes its own table (a statement that
-- inserted into the table it also reads would re-read its own new rows for
-- every candidate: quadratic on a big day).
CREATE UNLOGGED TABLE reconcile_work.reconcile_pairs_by_msgid AS
SELECT u.msg_id, r.message_id, r.message_created_at, 1::smallint AS pass
  FROM reconcile_work.reconcile_uncorrelated u
  JOIN msg.provider_message_id_registry r ON r.provider_message_id = u.msg_id
