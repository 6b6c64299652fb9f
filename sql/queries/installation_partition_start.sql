-- The first day partition recorded by the first upgrade (V69__installation.sql),
-- used when SMS_PIPELINE_PARTITION_START is unset: one row, one date.
-- Parameters: none.
SELECT partition_start FROM public.installation
