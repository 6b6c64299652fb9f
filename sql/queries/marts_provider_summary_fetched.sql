-- Record that the provider summary of a day was fetched, with how many
-- sender rows it had (0: a day without traffic, not a day never fetched).
-- Parameters: day, fetched_at, sender_rows.
INSERT INTO dlr.provider_summary_fetch (day, fetched_at, sender_rows)
VALUES (%(day)s, %(fetched_at)s, %(sender_rows)s)
