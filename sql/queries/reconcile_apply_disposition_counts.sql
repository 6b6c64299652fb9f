-- Events linked in this run, by disposition. Returns (disposition, events).
SELECT disposition, count(*) FROM reconcile_work.reconcile_event_dispositions GROUP BY 1
