-- Empty the session's getDlr staging table before a pull (a session that
-- pulled before may still hold one).
-- Parameters: none.
TRUNCATE ingest_getdlr_stage
