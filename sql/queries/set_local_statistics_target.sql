-- How many rows ANALYZE samples (300 per unit of the target), until this
-- transaction ends (the SET LOCAL of default_statistics_target).
-- Parameters: target (text, e.g. '10').
SELECT set_config('default_statistics_target', %(target)s, true)
