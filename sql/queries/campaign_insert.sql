-- A new campaign (docs/design.md#campaigns), written in the transaction of
-- its first rows. Names are unique: when another command took the name
-- first, nothing is inserted and nothing returned.
-- Parameters: name, provider_side, local_time (the wall-clock time asked
-- for), time_zone, scheduled_for (the instant it names), now.
-- Returns the new campaign's id.
INSERT INTO msg.campaign (name, provider_side, local_time, time_zone, scheduled_for, created_at, updated_at)
VALUES (%(name)s, %(provider_side)s, %(local_time)s, %(time_zone)s, %(scheduled_for)s, %(now)s, %(now)s)
ON CONFLICT (name) DO NOTHING
RETURNING id
