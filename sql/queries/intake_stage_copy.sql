-- Copy an intake batch into its staging table (intake_stage_create), in the
-- column order the intake writes them; `ord` is the request's position.
-- Identifiers: columns (the column list).
-- Parameters: none.
COPY worker_intake_staging ({columns}) FROM STDIN
