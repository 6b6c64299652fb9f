-- Legacy side, read only: the next rows of the legacy sends table by primary
-- key, after after_id, created at or after since (NULL: all), at most limit.
-- Each column is read as the type the adoption expects; a `timestamp`
-- created_at is read in the session's TimeZone.
-- Identifiers: table, id, phone, message, sent, response, created_at, event (a column, or NULL).
-- Parameters: after_id (NULL: from the start), since (timestamptz or NULL), limit.
-- Returns (id, phone, message, sent, response, created_at, event), by id.
SELECT {id}::bigint, {phone}::text, {message}::text, {sent}::boolean, {response}::text,
       {created_at}::timestamptz, {event}::text
  FROM {table}
 WHERE (%(after_id)s::bigint IS NULL OR {id} > %(after_id)s::bigint)
   AND (%(since)s::timestamptz IS NULL OR {created_at} >= %(since)s::timestamptz)
 ORDER BY {id}
 LIMIT %(limit)s
