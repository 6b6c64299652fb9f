-- Legacy side, read only: how many rows a backfill from after_id (NULL: the
-- start) created at or after since (NULL: all) has ahead of it (its progress bar).
-- Identifiers: table, id, created_at.
-- Parameters: after_id, since.
SELECT count(*)
  FROM {table}
 WHERE (%(after_id)s::bigint IS NULL OR {id} > %(after_id)s::bigint)
   AND (%(since)s::timestamptz IS NULL OR {created_at} >= %(since)s::timestamptz)
