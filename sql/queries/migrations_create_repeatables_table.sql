-- The record of the repeatable migrations (R__<what>.sql) applied: one row
-- per file, with the SHA-256 of the content last applied. A file without a
-- row, or whose content differs, is applied again. Created by the first
-- upgrade.
-- Parameters: none.
CREATE TABLE IF NOT EXISTS public.schema_repeatables (
    name        TEXT PRIMARY KEY,
    checksum    TEXT NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
)
