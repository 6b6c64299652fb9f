-- Receipt partitions for every submit month among the day's new events, so
-- the insert at the end never meets a missing partition (a row filed in a
-- neighbouring day's file may belong to the next or previous month).
-- Returns how many partitions were created.
WITH span AS (
    SELECT min(provider_submit_at) AS first_submit, max(provider_submit_at) AS last_submit
      FROM reconcile_work.reconcile_new_events
), months AS (
    SELECT first_submit,
           (EXTRACT(YEAR FROM last_submit AT TIME ZONE 'UTC') * 12 + EXTRACT(MONTH FROM last_submit AT TIME ZONE 'UTC'))
         - (EXTRACT(YEAR FROM first_submit AT TIME ZONE 'UTC') * 12 + EXTRACT(MONTH FROM first_submit AT TIME ZONE 'UTC'))
             AS months_ahead
      FROM span
     WHERE first_submit IS NOT NULL
)
SELECT COALESCE((SELECT dlr.ensure_partitions(first_submit, months_ahead::int) FROM months), 0) AS created
