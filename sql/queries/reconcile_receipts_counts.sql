-- What the day's raw loads held: rows, rows that could not be keyed, new
-- events (and how many of them carry an unmapped word), rows with an
-- unmapped word (every source, replays included) by word. One read of each
-- work table: the source rows grouped by word (a few dozen groups).
-- Returns one row.
WITH per_word AS (
    SELECT status_word, outcome = 'unmapped' AS unmapped, count(*) AS n,
           count(*) FILTER (WHERE msg_id IS NULL OR provider_submit_at IS NULL) AS unkeyed
      FROM reconcile_work.reconcile_source_rows
     GROUP BY status_word, outcome = 'unmapped'
),
new_events AS (
    SELECT count(*) AS n, count(*) FILTER (WHERE outcome = 'unmapped') AS unmapped
      FROM reconcile_work.reconcile_new_events
)
SELECT COALESCE(sum(w.n), 0)::bigint AS source_rows,
       COALESCE(sum(w.unkeyed), 0)::bigint AS unkeyed_rows,
       (SELECT n FROM new_events) AS new_receipts,
       (SELECT unmapped FROM new_events) AS new_unmapped_receipts,
       COALESCE(sum(w.n) FILTER (WHERE w.unmapped), 0)::bigint AS unmapped_rows,
       COALESCE(jsonb_object_agg(w.status_word, w.n) FILTER (WHERE w.unmapped), '{}'::jsonb) AS unmapped_words
  FROM per_word w
