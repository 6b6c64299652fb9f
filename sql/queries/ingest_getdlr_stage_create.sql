-- The session's staging table for an intraday getDlr pull: pages are copied
-- into it as they arrive, each in its own short transaction, so it lives
-- for the session (dropped by ingest_getdlr_stage_drop when the pull ends).
-- Parameters: none.
CREATE TEMP TABLE IF NOT EXISTS ingest_getdlr_stage (LIKE dlr.getdlr_rows)
