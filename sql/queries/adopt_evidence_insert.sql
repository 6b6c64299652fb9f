-- Keep what a legacy row without a usable transaction id had stored, once.
-- Parameters: tenant_id, adopted_from, problem, response, now.
INSERT INTO msg.adoption_evidence (tenant_id, adopted_from, problem, response, recorded_at)
VALUES (%(tenant_id)s, %(adopted_from)s, %(problem)s, %(response)s, %(now)s)
ON CONFLICT (tenant_id, adopted_from) DO NOTHING
