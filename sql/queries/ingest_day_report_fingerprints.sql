-- A temporary table of the staged day report's message texts with a
-- fingerprint (a blank text has none), computed in Python by
-- core.fingerprint (the key never leaves the process). Its primary key tells
-- the planner each text matches once: the INSERT hash-joins it.
-- Parameters: none.
CREATE TEMPORARY TABLE day_report_fingerprints (
    message     TEXT PRIMARY KEY,
    fingerprint BYTEA NOT NULL
) ON COMMIT DROP
