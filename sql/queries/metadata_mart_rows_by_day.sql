-- Rows of one mart per day of a range, for each day's dagster/row_count
-- (every mart has a provider-local `day` column; days without rows are absent).
-- Identifiers: mart (a table of schema marts).
-- Parameters: first, last (both ends included).
SELECT day, count(*)
  FROM marts.{mart}
 WHERE day BETWEEN %(first)s AND %(last)s
 GROUP BY day
