-- Record the last legacy id of a committed backfill batch (in its transaction).
-- Parameters: tenant_id, legacy_table, since, last_legacy_id, now.
INSERT INTO msg.adoption_checkpoint (tenant_id, legacy_table, since, last_legacy_id, updated_at)
VALUES (%(tenant_id)s, %(legacy_table)s, %(since)s::date, %(last_legacy_id)s, %(now)s)
ON CONFLICT (tenant_id, legacy_table)
DO UPDATE SET since = EXCLUDED.since, last_legacy_id = EXCLUDED.last_legacy_id, updated_at = EXCLUDED.updated_at
