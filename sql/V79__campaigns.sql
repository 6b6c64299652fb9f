-- Campaigns (docs/design.md#campaigns): a named set of rows sent at one
-- provider-local wall-clock time, held here (local scheduling, the default:
-- the rows stay `pending` with scheduled_for until due) or handed to the
-- provider with a scheduleTime (provider_side: the rows wait `scheduled`).
--
-- The campaign id is ours; the provider's campaignId and each transaction's
-- uuId go on the rows (provider_campaign_id, provider_txn_id): a campaign of
-- more than SMS_PIPELINE_CAMPAIGN_REQUEST_SIZE recipients is several
-- requests, so several provider campaigns.
CREATE TABLE msg.campaign (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE CHECK (name <> ''),
    provider_side   BOOLEAN NOT NULL,
    -- The wall-clock time asked for, in time_zone (the provider's), and the
    -- instant it names: both kept, so a reader sees what was asked.
    local_time      TIMESTAMP NOT NULL,
    time_zone       TEXT NOT NULL CHECK (time_zone <> ''),
    scheduled_for   TIMESTAMPTZ NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    cancelled_at    TIMESTAMPTZ,
    updated_at      TIMESTAMPTZ NOT NULL
);

-- Set when the row is written, never changed (the update guard).
ALTER TABLE msg.outbound_message ADD COLUMN campaign_id BIGINT REFERENCES msg.campaign (id);

-- On queue_state, not state: an index reading state would make the sending
-- step (claimed -> sending) a non-HOT update for every row (docs/design.md#the-sending-step-on-the-page).
CREATE INDEX outbound_message_campaign_idx
    ON msg.outbound_message (campaign_id, queue_state)
    WHERE campaign_id IS NOT NULL;

-- Rows the provider holds, by the time it will send them (the promotion to `submitted`).
CREATE INDEX outbound_message_scheduled_idx
    ON msg.outbound_message (scheduled_for)
    WHERE queue_state = 'scheduled';

-- A scheduled row names the provider transaction and campaign that hold it
-- and when they will send it, and is not billed (nothing was sent).
ALTER TABLE msg.outbound_message
    ADD CONSTRAINT outbound_message_scheduled_check
        CHECK (state <> 'scheduled'
               OR (provider_txn_id IS NOT NULL AND provider_campaign_id IS NOT NULL AND scheduled_for IS NOT NULL
                   AND claimed_at IS NOT NULL AND submitted_at IS NULL AND cost IS NULL));
