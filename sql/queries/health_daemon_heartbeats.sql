-- Run on the Dagster database (dagster-postgres' run storage): the last
-- heartbeat of each daemon type asked for, read from the heartbeat's own
-- body (the float `timestamp` Dagster itself compares; the `timestamp`
-- column is a TIMESTAMP without zone, converted by the writer's session
-- zone), and how many errors that heartbeat carries (Dagster keeps a
-- daemon's errors of the last 5 minutes in it). beat_at is NULL for a type
-- that never beat. Raises undefined_table when Dagster's storage was never
-- created.
-- Parameters: daemon_types (text[]). Returns (daemon_type, beat_at, errors).
SELECT t.daemon_type,
       to_timestamp((h.body::jsonb ->> 'timestamp')::float8) AS beat_at,
       CASE WHEN jsonb_typeof(h.body::jsonb -> 'errors') = 'array'
            THEN jsonb_array_length(h.body::jsonb -> 'errors') ELSE 0 END AS errors
  FROM unnest(%(daemon_types)s::text[]) AS t (daemon_type)
  LEFT JOIN daemon_heartbeats h ON h.daemon_type = t.daemon_type
 ORDER BY t.daemon_type
