-- Pass 1: by msgId, through the global registry (one row per msgId, and a
-- row holds one msgId, so a match here is never ambiguous).
-- Creates the temporary table reconcile_pairs: candidate (msgId, message
-- row) pairs, each with the pass that found it; passes 2 and 3 add theirs.
CREATE TEMPORARY TABLE reconcile_pairs ON COMMIT DROP AS
SELECT u.msg_id, r.message_id, r.message_created_at, 1::smallint AS pass
  FROM reconcile_uncorrelated u
  JOIN msg.provider_message_id_registry r ON r.provider_message_id = u.msg_id
