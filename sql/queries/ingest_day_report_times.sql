-- A temporary table of the staged day report's readable time texts, each
-- with its first and its second reading (equal unless the clocks went back),
-- computed in Python (ingest_day_report_times_copy). Its primary key tells
-- the planner each text matches once: the INSERT hash-joins it.
-- Parameters: none.
CREATE TEMPORARY TABLE day_report_times (
    local_text TEXT PRIMARY KEY,
    first_at   TIMESTAMPTZ NOT NULL,
    later_at   TIMESTAMPTZ NOT NULL
) ON COMMIT DROP
