-- Age in whole seconds of the oldest work not yet handed to the provider
-- (`pending`, `claimed`, or `sending` with its request in flight), counted from when it became due (scheduled_for,
-- else created_at), so a send scheduled for next week is not "old" today.
-- 0, never NULL, when nothing is waiting: a NULL is a gap in a time series,
-- and a gap never alerts.
-- Parameters: now (application clock).
SELECT COALESCE(
           floor(EXTRACT(EPOCH FROM (%(now)s::timestamptz - MIN(COALESCE(scheduled_for, created_at)))))::bigint,
           0) AS oldest_pending_age_seconds
  FROM msg.outbound_message
 WHERE state IN ('pending', 'claimed', 'sending')
   AND COALESCE(scheduled_for, created_at) <= %(now)s::timestamptz
