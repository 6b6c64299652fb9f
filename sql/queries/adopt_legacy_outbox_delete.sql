-- LEGACY DATABASE (adopt sync). Deletes the outbox entries a batch adopted:
-- per legacy row, the entries up to the latest one read (one recorded
-- meanwhile stays for the next batch).
-- Parameters: table (the legacy table's name as SQL text, quoted), legacy_ids, seqs (pairwise).
DELETE FROM sms_pipeline_adopt_outbox o
 USING unnest(%(legacy_ids)s::bigint[], %(seqs)s::bigint[]) AS adopted (legacy_id, seq)
 WHERE o.legacy_table = to_regclass(%(table)s)
   AND o.legacy_id = adopted.legacy_id
   AND o.seq <= adopted.seq
