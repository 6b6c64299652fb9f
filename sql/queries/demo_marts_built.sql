-- Whether the marts have been materialised at least once (marts.cost_daily
-- exists): a demo that stopped earlier has messages but no marts.
-- Parameters: none.
SELECT to_regclass('marts.cost_daily') IS NOT NULL
