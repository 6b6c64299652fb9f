-- What the day's raw loads held: rows, rows that could not be keyed, new
-- events (and how many of them carry an unmapped word), rows with an
-- unmapped word (every source, replays included) by word.
-- Returns one row.
WITH unmapped AS (
    SELECT status_word, count(*) AS n FROM reconcile_work.reconcile_source_rows WHERE outcome = 'unmapped' GROUP BY status_word
)
SELECT (SELECT count(*) FROM reconcile_work.reconcile_source_rows) AS source_rows,
       (SELECT count(*) FROM reconcile_work.reconcile_source_rows
         WHERE msg_id IS NULL OR provider_submit_at IS NULL) AS unkeyed_rows,
       (SELECT count(*) FROM reconcile_work.reconcile_new_events) AS new_receipts,
       (SELECT count(*) FROM reconcile_work.reconcile_new_events WHERE outcome = 'unmapped') AS new_unmapped_receipts,
       (SELECT COALESCE(sum(n), 0) FROM unmapped)::bigint AS unmapped_rows,
       (SELECT COALESCE(jsonb_object_agg(status_word, n), '{}'::jsonb) FROM unmapped) AS unmapped_words
