-- The distinct submit and delivery time texts of the staged day report,
-- read in Python with the provider-time policy (DST included), once each.
-- Parameters: none.
SELECT submit_time FROM day_report_staging WHERE submit_time IS NOT NULL
UNION
SELECT delivery_time FROM day_report_staging WHERE delivery_time IS NOT NULL
