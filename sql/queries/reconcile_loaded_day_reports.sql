-- The loaded day reports among the given provider days, with the time of
-- the latest download known to hold the content now loaded: the download
-- that loaded it, or a later one that found it unchanged.
-- Parameters: days (date[]). Returns (report_date, downloaded_at).
SELECT c.report_date, GREATEST(c.fetched_at, f.confirmed_at)
  FROM dlr.report_checkpoints c
  LEFT JOIN dlr.report_confirmations f USING (report_kind, report_date)
 WHERE c.report_kind = 'day'
   AND c.report_date = ANY(%(days)s::date[])
   AND c.loaded_at IS NOT NULL
