-- Memory for this transaction's sorts and hash joins, until it ends (the
-- SET LOCAL of work_mem, with the size as a parameter).
-- Parameters: work_mem (e.g. '64MB').
SELECT set_config('work_mem', %(work_mem)s, true)
