-- Allow, for the rest of the current transaction only, a stored report to be
-- replaced by a smaller one (the triggers of R__report_guards.sql read it;
-- docs/design.md#report-guards). Run only when a person asked for it
-- (--allow-shrink, run config allow_shrink: true).
-- Parameters: none.
SELECT set_config('sms_pipeline.allow_shrink', 'on', true)
