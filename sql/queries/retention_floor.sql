-- The latest send attempt of any message row retention dropped
-- (msg.message_retention_floor): a mart day starting at or before it is never
-- rebuilt. Parameters: none. Returns the instant, or no row when nothing was dropped.
SELECT last_dropped_attempt_at FROM msg.message_retention_floor
