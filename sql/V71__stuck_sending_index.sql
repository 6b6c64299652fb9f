-- Requests whose lease ran out while in flight (stuck_sending.sql): the
-- `sending` twin of outbound_message_stuck_claims_idx (V6). Small: only rows
-- whose request is in flight. Needs V70's enum value, committed in its own
-- file before this one.
CREATE INDEX outbound_message_stuck_sending_idx
    ON msg.outbound_message (claimed_at)
    WHERE state = 'sending';
