-- The rate-card load's staging table, dropped at commit: the parsed card is
-- inserted here (rates_stage_insert), then applied by rates_update_changed
-- and rates_insert_new.
-- Parameters: none.
CREATE TEMPORARY TABLE worker_rate_staging (
    tenant_id       text            NOT NULL,
    channel         msg.message_channel NOT NULL,
    message_class   text            NOT NULL,
    unit_price      numeric(12,4)   NOT NULL,
    currency        char(3)         NOT NULL,
    valid_from      date            NOT NULL,
    valid_to        date
) ON COMMIT DROP
