-- Wait for the migration runner's session-level advisory lock and hold it
-- until migrations_unlock: one upgrade at a time, whichever process starts
-- it (several services starting at once all upgrade).
-- Parameters: key (bigint, the runner's constant).
SELECT pg_advisory_lock(%(key)s)
