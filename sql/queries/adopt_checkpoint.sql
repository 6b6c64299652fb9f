-- Where the last backfill of a legacy table for a tenant stopped.
-- Parameters: tenant_id, legacy_table. Returns (since, last_legacy_id), or no row.
SELECT since, last_legacy_id
  FROM msg.adoption_checkpoint
 WHERE tenant_id = %(tenant_id)s AND legacy_table = %(legacy_table)s
