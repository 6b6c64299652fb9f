-- Bound every later statement of this session (a probe that waits on a
-- lock must fail, not pile up behind the next one).
-- Parameters: timeout (text such as '5s').
SELECT set_config('statement_timeout', %(timeout)s, false)
