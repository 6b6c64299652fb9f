-- The two-key form of advisory_xact_lock: a class of work (a constant of the
-- code) and one item of it (e.g. a day as its ordinal), so that loads of the
-- same day serialise while different days run side by side. Held until this
-- transaction ends.
-- Parameters: lock_class (integer), key (integer).
SELECT pg_advisory_xact_lock(%(lock_class)s, %(key)s)
