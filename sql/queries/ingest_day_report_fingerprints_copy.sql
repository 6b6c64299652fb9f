-- The fingerprints of the staged message texts into day_report_fingerprints.
-- Parameters: none.
COPY day_report_fingerprints (message, fingerprint) FROM STDIN
