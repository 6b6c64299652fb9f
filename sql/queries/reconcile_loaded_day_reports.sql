-- The loaded day reports among the given provider days, with the time of
-- the latest download known to hold the content now loaded: the download
-- that loaded it, or a later one that found it unchanged; and whether the
-- loaded content has been reconciled since it was loaded (its lines matched
-- by its own day's pass, V82), which a following day needs to count toward a
-- handed-over row's proof.
-- Parameters: days (date[]). Returns (report_date, downloaded_at, reconciled).
SELECT c.report_date, GREATEST(c.fetched_at, f.confirmed_at), COALESCE(c.reconciled_at >= c.loaded_at, false)
  FROM dlr.report_checkpoints c
  LEFT JOIN dlr.report_confirmations f USING (report_kind, report_date)
 WHERE c.report_kind = 'day'
   AND c.report_date = ANY(%(days)s::date[])
   AND c.loaded_at IS NOT NULL
