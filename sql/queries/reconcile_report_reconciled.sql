-- Record that day D's loaded report has been reconciled (at the end of
-- reconcile_day(D), in its transaction, with the reconciliation's clock): a
-- neighbouring day's report counts toward a proof only once its lines are
-- matched (V82, docs/design.md#proof-of-non-submission). Nothing when D's
-- report is not loaded.
-- Parameters: report_date, now. Returns nothing.
UPDATE dlr.report_checkpoints
   SET reconciled_at = %(now)s::timestamptz
 WHERE report_kind = 'day'
   AND report_date = %(report_date)s::date
   AND loaded_at IS NOT NULL
