-- Receipt partitions for every submit month found in one provider day's
-- raw loads (day report, by-transaction reports, getDlr pulls), so the
-- insert that follows never meets a missing partition (a row filed in a
-- neighbouring day's file may belong to the next or previous month).
-- Parameters: report_date. Returns how many partitions were created.
WITH span AS (
    SELECT min(provider_submit_at) AS first_submit, max(provider_submit_at) AS last_submit
      FROM (
        SELECT provider_submit_at FROM dlr.day_report_rows WHERE report_date = %(report_date)s
        UNION ALL
        SELECT provider_submit_at FROM dlr.txn_report_rows WHERE report_date = %(report_date)s
        UNION ALL
        SELECT provider_submit_at FROM dlr.getdlr_rows WHERE report_date = %(report_date)s
      ) AS raw
), months AS (
    SELECT first_submit,
           (EXTRACT(YEAR FROM last_submit AT TIME ZONE 'UTC') * 12 + EXTRACT(MONTH FROM last_submit AT TIME ZONE 'UTC'))
         - (EXTRACT(YEAR FROM first_submit AT TIME ZONE 'UTC') * 12 + EXTRACT(MONTH FROM first_submit AT TIME ZONE 'UTC'))
             AS months_ahead
      FROM span
     WHERE first_submit IS NOT NULL
)
SELECT COALESCE((SELECT dlr.ensure_partitions(first_submit, months_ahead::int) FROM months), 0) AS created
