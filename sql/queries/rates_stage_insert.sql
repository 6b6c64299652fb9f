-- One parsed rate-card line into the load's staging table (run once per line).
-- Parameters: tenant_id, channel, message_class, unit_price, currency, valid_from, valid_to.
INSERT INTO worker_rate_staging (tenant_id, channel, message_class, unit_price, currency, valid_from, valid_to)
VALUES (%(tenant_id)s, %(channel)s, %(message_class)s, %(unit_price)s, %(currency)s, %(valid_from)s, %(valid_to)s)
