-- The loaded day reports among the given provider days, with the time of
-- the download now loaded (a download whose content was unchanged is not
-- recorded, so this is the last download that changed the load).
-- Parameters: days (date[]). Returns (report_date, fetched_at).
SELECT report_date, fetched_at
  FROM dlr.report_checkpoints
 WHERE report_kind = 'day'
   AND report_date = ANY(%(days)s::date[])
   AND loaded_at IS NOT NULL
