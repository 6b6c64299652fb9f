-- When a day's report was last reconciled (reconcile_day of that day, in its
-- transaction; reconcile_report_reconciled.sql). "Complete" (downloaded after
-- close + grace) only says the file is all there: its lines are matched only
-- by that day's own pass. A handed-over row of D whose line lies on D + 1
-- (docs/design.md#proof-of-non-submission) is proved by D's pass only once
-- D + 1's complete report has been reconciled since it was loaded
-- (reconciled_at >= loaded_at); D's pass runs first in a daily run, before
-- D + 1's lines are matched. A new load (loaded_at moves on) makes the day
-- unreconciled again. NULL: never reconciled since this column exists.
-- Updating only this column keeps every row count, so the never-shrink guard
-- (R__report_guards.sql) lets it through unchanged.
ALTER TABLE dlr.report_checkpoints ADD COLUMN reconciled_at TIMESTAMPTZ;

COMMENT ON COLUMN dlr.report_checkpoints.reconciled_at IS
    'Last reconciliation of the day (kind day) whose report was loaded then; >= loaded_at: the loaded lines are matched.';
