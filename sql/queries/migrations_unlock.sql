-- Release the migration runner's advisory lock taken by migrations_lock.
-- Parameters: key (bigint, the runner's constant).
SELECT pg_advisory_unlock(%(key)s)
