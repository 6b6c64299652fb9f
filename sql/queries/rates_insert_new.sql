-- Staged prices whose (tenant, channel, class, valid_from) has no row yet.
-- Parameters: none. The row count is the number of rows inserted.
INSERT INTO msg.rate_card (tenant_id, channel, message_class, unit_price, currency, valid_from, valid_to)
SELECT s.tenant_id, s.channel, s.message_class, s.unit_price, s.currency, s.valid_from, s.valid_to
  FROM worker_rate_staging s
 WHERE NOT EXISTS (SELECT 1 FROM msg.rate_card r
                    WHERE r.tenant_id = s.tenant_id AND r.channel = s.channel
                      AND r.message_class = s.message_class AND r.valid_from = s.valid_from)
 ORDER BY s.tenant_id, s.channel, s.message_class, s.valid_from
