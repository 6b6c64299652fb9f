-- Drop the session's getDlr staging table once the pull is stored (or failed).
-- Parameters: none.
DROP TABLE IF EXISTS ingest_getdlr_stage
