-- The record of the versioned migrations (V<n>__<what>.sql) applied: one row
-- per file, with the SHA-256 of its content when it was applied (an applied
-- file must never change). Created by the first upgrade.
-- Parameters: none.
CREATE TABLE IF NOT EXISTS public.schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
)
