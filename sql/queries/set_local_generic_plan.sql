-- Until this transaction ends, prepared statements use one generic plan
-- instead of planning anew for each set of parameter values (the SET LOCAL
-- of plan_cache_mode).
-- Parameters: none.
SELECT set_config('plan_cache_mode', 'force_generic_plan', true)
