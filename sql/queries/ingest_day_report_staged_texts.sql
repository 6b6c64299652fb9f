-- The distinct message texts of the staged day report, fingerprinted in
-- Python (core.fingerprint: the key never leaves the process).
-- Parameters: none.
SELECT DISTINCT message FROM day_report_staging WHERE message IS NOT NULL
