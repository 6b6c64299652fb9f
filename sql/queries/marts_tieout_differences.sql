-- The tie-out rows of a range of days whose units differ (provider minus
-- ours, non-zero), for the tie-out check's metadata: which day, which sender,
-- by how much. Days whose summary was not fetched compare nothing.
-- Parameters: first, last (provider-local days, both ends included).
SELECT day, sender_id, our_units::bigint, provider_units::bigint, difference::bigint
  FROM marts.provider_tieout_daily
 WHERE day BETWEEN %(first)s AND %(last)s
   AND difference <> 0
 ORDER BY day, sender_id
