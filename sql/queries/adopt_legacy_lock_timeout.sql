-- LEGACY DATABASE (adopt install-trigger). How long the installation's
-- transaction waits for a lock on the legacy table: CREATE TRIGGER queued
-- behind a long transaction would queue the old sender's writes behind it.
-- Parameters: lock_timeout (a duration, e.g. '5s').
SELECT set_config('lock_timeout', %(lock_timeout)s, true)
