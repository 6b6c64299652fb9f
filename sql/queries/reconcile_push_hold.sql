-- The held msgIds' new events (reconcile_work.reconcile_push_held) leave the pass before
-- anything is decided or stored: the next pass stages them again.
-- Parameters: none. Returns one row: msgIds held, events held back.
WITH held AS (
    DELETE FROM reconcile_work.reconcile_new_events n
     USING reconcile_work.reconcile_push_held h
     WHERE n.msg_id = h.msg_id
    RETURNING 1
)
SELECT (SELECT count(*) FROM reconcile_work.reconcile_push_held) AS held_msgids,
       (SELECT count(*) FROM held) AS held_events
