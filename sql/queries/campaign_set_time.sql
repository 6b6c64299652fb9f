-- A reschedule that reached every row: the campaign takes the new time
-- (the wall-clock time asked for and its instant).
-- Parameters: id, local_time, at, now.
UPDATE msg.campaign
   SET local_time = %(local_time)s::timestamp, scheduled_for = %(at)s::timestamptz, updated_at = %(now)s
 WHERE id = %(id)s
   AND (local_time, scheduled_for) IS DISTINCT FROM (%(local_time)s::timestamp, %(at)s::timestamptz)
