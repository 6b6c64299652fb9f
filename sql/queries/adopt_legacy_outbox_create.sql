-- LEGACY DATABASE (adopt install-trigger). The outbox the dual-write trigger
-- fills: one row per recorded send of a legacy row, its mapped values copied
-- as they were when recorded (seq orders them; a legacy row may appear more
-- than once when it was written more than once). adopt sync drains it.
-- legacy_table is the table's oid, so one outbox serves several tables.
-- Parameters: none.
CREATE TABLE IF NOT EXISTS sms_pipeline_adopt_outbox (
    seq          BIGSERIAL   PRIMARY KEY,
    legacy_table OID         NOT NULL,
    legacy_id    BIGINT      NOT NULL,
    phone        TEXT,
    message      TEXT,
    sent         BOOLEAN,
    response     TEXT,
    created_at   TIMESTAMPTZ,
    event        TEXT,
    recorded_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
)
