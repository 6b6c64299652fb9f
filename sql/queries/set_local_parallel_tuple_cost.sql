-- The planner's cost of handing one row from a parallel worker to the
-- leader, until this transaction ends (the SET LOCAL of parallel_tuple_cost;
-- docs/design.md "Work tables and the second core").
-- Parameters: cost (text, e.g. '0.001').
SELECT set_config('parallel_tuple_cost', %(cost)s, true)
