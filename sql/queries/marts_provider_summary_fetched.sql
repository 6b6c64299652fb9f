-- Record that the provider summary of a day was fetched, with how many
-- sender rows it had (0: a day without traffic, not a day never fetched) and
-- their units, updating the day's marker in place (fewer rows or units is
-- refused by trigger unless allowed, R__report_guards.sql). Run before the
-- day's sender rows are replaced (marts_provider_summary_clear, _row).
-- Parameters: day, fetched_at, sender_rows, units.
INSERT INTO dlr.provider_summary_fetch AS f (day, fetched_at, sender_rows, units)
VALUES (%(day)s, %(fetched_at)s, %(sender_rows)s, %(units)s)
ON CONFLICT (day) DO UPDATE
   SET fetched_at  = EXCLUDED.fetched_at,
       sender_rows = EXCLUDED.sender_rows,
       units       = EXCLUDED.units
