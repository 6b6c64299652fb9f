-- What is stored of one day's provider summary (its sender rows and units;
-- no row: never fetched), locked until the transaction that stores the new
-- fetch ends, so two fetches of the day cannot interleave.
-- Parameters: day.
SELECT sender_rows, units
  FROM dlr.provider_summary_fetch
 WHERE day = %(day)s
   FOR UPDATE
