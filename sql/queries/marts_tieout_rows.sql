-- Every marts.provider_tieout_daily row of a range of days (both ends
-- included): the itemised tie-out per day and sender id, for the tie-out
-- check's metadata, `report tieout` and the demo's closing table.
-- Parameters: first, last (provider-local days).
SELECT day, sender_id, status, provider_units, day_report_units, our_units, difference,
       matched_messages, matched_units, units_differ_messages, units_differ_units,
       provider_only_messages, provider_only_units, ours_only_messages, ours_only_units,
       ambiguous_provider_messages, ambiguous_our_messages, ambiguous_units,
       summary_minus_report_units, residual, unplaced_messages, unknown_units, unpriced_units
  FROM marts.provider_tieout_daily
 WHERE day >= %(first)s AND day <= %(last)s
 ORDER BY day, sender_id NULLS FIRST
