-- The intake batch's staging table, dropped at commit: requests are copied
-- in (intake_stage_copy) and go on from here in two set-based statements
-- (intake_insert_new, intake_resolve).
-- Parameters: none.
CREATE TEMPORARY TABLE worker_intake_staging (
    ord             integer     NOT NULL,
    tenant_id       text        NOT NULL,
    business_key    text        NOT NULL,
    channel         text        NOT NULL,
    message_class   text        NOT NULL,
    recipient       text        NOT NULL,
    sender_id       text,
    body            text        NOT NULL,
    encoding        text        NOT NULL,
    segments        smallint    NOT NULL,
    template_id     text,
    dlt_entity_id   text,
    dlt_template_id text,
    scheduled_for   timestamptz,
    expires_at      timestamptz,
    message_fingerprint bytea       -- of the body as sent; NULL for an OTP (its code is made at send)
) ON COMMIT DROP
