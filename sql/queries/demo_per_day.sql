-- The demo's per-day figures, read back from the marts and the message
-- table: one row per provider-local day of the range (both ends included),
-- zeros for a day without traffic; the columns are the fields of
-- demo.summary.DaySummary but its tie-out (tieout.day_labels of the tie-out rows).
-- Parameters: first, last (provider-local days), tz (the provider's time zone).
WITH days AS (
    SELECT generate_series(%(first)s::date, %(last)s::date, interval '1 day')::date AS day
), delivery AS (
    SELECT day, sum(submitted) AS sent, sum(delivered) AS delivered, sum(failed) AS failed,
           sum(expired) AS expired_after_submission, sum(unknown) AS unknown, sum(still_pending) AS still_pending
      FROM marts.delivery_by_class_daily GROUP BY day
), costs AS (
    SELECT day, sum(billable_units) AS billable_units, sum(cost) AS cost, sum(rejected_messages) AS rejected,
           sum(unpriced_units) AS unpriced_units
      FROM marts.cost_daily GROUP BY day
), rows_by_day AS (
    -- A message's day is the provider-local day of its send attempt (msg.attempt_at,
    -- else created_at), as in the marts.
    SELECT (COALESCE(msg.attempt_at(submitted_at, claimed_at, scheduled_for), created_at)
                AT TIME ZONE %(tz)s)::date AS day,
           count(*) FILTER (WHERE correlation_result = 'ambiguous') AS ambiguous,
           count(*) FILTER (WHERE state = 'expired' AND submitted_at IS NULL) AS expired_unsent
      FROM msg.outbound_message GROUP BY 1
)
SELECT d.day,
       COALESCE(delivery.sent, 0)::bigint            AS sent,
       COALESCE(delivery.delivered, 0)::bigint       AS delivered,
       COALESCE(delivery.failed, 0)::bigint          AS failed,
       (COALESCE(delivery.expired_after_submission, 0) + COALESCE(r.expired_unsent, 0))::bigint AS expired,
       COALESCE(delivery.still_pending, 0)::bigint   AS still_pending,
       COALESCE(delivery.unknown, 0)::bigint         AS unknown,
       COALESCE(r.ambiguous, 0)::bigint              AS ambiguous,
       COALESCE(costs.rejected, 0)::bigint           AS rejected,
       COALESCE(rec.orphans_opened, 0)::bigint       AS orphans,
       COALESCE(costs.billable_units, 0)::bigint     AS billable_units,
       COALESCE(costs.cost, 0)::numeric(14, 4)       AS cost,
       COALESCE(costs.unpriced_units, 0)::bigint     AS unpriced_units
  FROM days d
  LEFT JOIN delivery ON delivery.day = d.day
  LEFT JOIN costs ON costs.day = d.day
  LEFT JOIN rows_by_day r ON r.day = d.day
  LEFT JOIN marts.reconciliation_daily rec ON rec.day = d.day
 ORDER BY d.day
