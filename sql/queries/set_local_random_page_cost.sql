-- The planner's price of reading one page out of order, until this
-- transaction ends (the SET LOCAL of random_page_cost; docs/design.md
-- "Index probes late in the month").
-- Parameters: cost (text, e.g. '1.1').
SELECT set_config('random_page_cost', %(cost)s, true)
