-- Message retention may drop a month partition only once the marts no longer
-- read it (docs/design.md#retention). The database says so from two records:
--
-- msg.mart_build_days: every mart day a dbt build wrote, with its bounds as
--   instants (so the guard needs no time zone) and the application clock's
--   time of the build. Written by the marts' dbt post-hook in the model's own
--   transaction, so a record exists exactly when the mart's rows do.
-- msg.message_retention_floor: the latest send attempt of any dropped row; a
--   mart day starting at or before it may read rows that are gone, so the
--   marts never rebuild it (they keep the aggregates they have).
CREATE TABLE msg.mart_build_days (
    mart      TEXT        NOT NULL,   -- the mart table's name in schema marts
    day       DATE        NOT NULL,   -- provider-local day
    starts_at TIMESTAMPTZ NOT NULL,   -- the day's half-open bounds in the provider's zone
    ends_at   TIMESTAMPTZ NOT NULL,
    built_at  TIMESTAMPTZ NOT NULL,   -- application clock at the build
    PRIMARY KEY (mart, day),
    CONSTRAINT mart_build_days_bounds_check CHECK (starts_at < ends_at)
);
CREATE INDEX mart_build_days_starts_at ON msg.mart_build_days (mart, starts_at);

CREATE TABLE msg.message_retention_floor (
    singleton               BOOLEAN     PRIMARY KEY DEFAULT true CHECK (singleton),
    last_dropped_attempt_at TIMESTAMPTZ NOT NULL
);

