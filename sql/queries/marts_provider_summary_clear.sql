-- Forget the stored provider summary of one day: the fetch marker, and with
-- it (ON DELETE CASCADE) the day's sender rows. Run in the transaction that
-- stores the new fetch.
-- Parameters: day.
DELETE FROM dlr.provider_summary_fetch WHERE day = %(day)s
