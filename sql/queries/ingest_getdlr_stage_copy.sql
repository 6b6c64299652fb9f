-- Copy one batch of getDlr rows into the session's staging table, in the
-- column order the ingest writes them.
-- Identifiers: columns (the column list).
-- Parameters: none.
COPY ingest_getdlr_stage ({columns}) FROM STDIN
