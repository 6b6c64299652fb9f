-- Wait for the transaction-level advisory lock `key` and hold it until this
-- transaction ends: one holder at a time, whichever process asks (a Dagster
-- run, the CLI, a benchmark). Keys are constants of the code that takes them.
-- Parameters: key (bigint).
SELECT pg_advisory_xact_lock(%(key)s)
