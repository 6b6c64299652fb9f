-- Forget every repeatable migration applied, in the transaction of a
-- versioned one: a V file may drop or replace what an R file defines (a
-- DROP ... CASCADE takes a function's triggers along), so after it every R
-- file is applied again, even when this upgrade stops before they run.
-- Parameters: none.
DELETE FROM public.schema_repeatables
