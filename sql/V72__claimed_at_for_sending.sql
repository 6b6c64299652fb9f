-- A row being sent was claimed first, and the lease of a `sending` row is
-- counted from its claim (stuck_sending.sql): `claimed_at` is set in both
-- states, as the database can say (V3 named only `claimed`).
ALTER TABLE msg.outbound_message
    DROP CONSTRAINT outbound_message_claimed_at_check,
    ADD CONSTRAINT outbound_message_claimed_at_check
        CHECK (state NOT IN ('claimed', 'sending') OR claimed_at IS NOT NULL);
