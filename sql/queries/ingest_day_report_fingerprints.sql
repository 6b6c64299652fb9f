-- A temporary table of the staged day report's message texts with a
-- fingerprint (a blank text has none), computed in Python by
-- core.fingerprint (the key never leaves the process). No index on the text:
-- a long message (up to the CSV field limit) would not fit a btree entry and
-- fail the day's load; the texts are distinct already and the INSERT
-- hash-joins them (the table is analysed after its COPY).
-- Parameters: none.
CREATE TEMPORARY TABLE day_report_fingerprints (
    message     TEXT NOT NULL,
    fingerprint BYTEA NOT NULL
) ON COMMIT DROP
