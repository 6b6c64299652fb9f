-- The readings of the staged time texts into day_report_times.
-- Parameters: none.
COPY day_report_times (local_text, first_at, later_at) FROM STDIN
