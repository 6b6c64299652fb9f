-- Legacy side, read only: the UTC months (our partitions' months) of the rows
-- a backfill from after_id (NULL: the start) created at or after since (NULL:
-- all) has ahead of it, each with its earliest created_at (a month holding
-- only rows before the first day partition needs no partition).
-- Identifiers: table, id, created_at.
-- Parameters: after_id, since.
-- Returns (month start as timestamptz, earliest created_at), by month.
SELECT date_trunc('month', {created_at}::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month,
       min({created_at}::timestamptz)
  FROM {table}
 WHERE (%(after_id)s::bigint IS NULL OR {id} > %(after_id)s::bigint)
   AND (%(since)s::timestamptz IS NULL OR {created_at} >= %(since)s::timestamptz)
   AND {created_at} IS NOT NULL
 GROUP BY 1
 ORDER BY 1
