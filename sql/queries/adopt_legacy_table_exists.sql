-- LEGACY DATABASE. Whether a table exists (the legacy table, the outbox).
-- Parameters: table (its name as SQL text, quoted).
SELECT to_regclass(%(table)s) IS NOT NULL
