-- Staged prices whose (tenant, channel, class, valid_from) already has a row
-- that says something else: that row takes the new price, currency and end.
-- Run before rates_insert_new: a shortened period must be in place before
-- the row that continues it is inserted, or the two would overlap (the
-- rate_card_no_overlap trigger refuses the whole load).
-- Parameters: none. The row count is the number of rows changed.
UPDATE msg.rate_card r
   SET unit_price = s.unit_price, currency = s.currency, valid_to = s.valid_to
  FROM worker_rate_staging s
 WHERE r.tenant_id = s.tenant_id AND r.channel = s.channel
   AND r.message_class = s.message_class AND r.valid_from = s.valid_from
   AND (r.unit_price, r.currency, r.valid_to) IS DISTINCT FROM (s.unit_price, s.currency, s.valid_to)
