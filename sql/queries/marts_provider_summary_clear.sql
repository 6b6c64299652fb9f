-- Forget the stored sender rows of one day's provider summary, in the
-- transaction that records the new fetch (marts_provider_summary_fetched)
-- and inserts its rows (marts_provider_summary_row).
-- Parameters: day.
DELETE FROM dlr.provider_summary WHERE day = %(day)s
