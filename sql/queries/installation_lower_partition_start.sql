-- Lower the recorded first day partition to the first of the month of `day`
-- (e.g. the demo's first day); a later month leaves it as it is (it is never
-- raised). The recorded start afterwards.
-- Parameters: day (a date).
UPDATE public.installation
   SET partition_start = least(partition_start, date_trunc('month', %(day)s::date)::date)
RETURNING partition_start
