-- Forget the checkpoint of a legacy table for a tenant once a backfill ran to
-- its end: the checkpoint only resumes a killed run; a complete re-run reads
-- every row again (a row sent since may sit below the old checkpoint) and
-- inserts only what is new.
-- Parameters: tenant_id, legacy_table.
DELETE FROM msg.adoption_checkpoint
 WHERE tenant_id = %(tenant_id)s AND legacy_table = %(legacy_table)s
