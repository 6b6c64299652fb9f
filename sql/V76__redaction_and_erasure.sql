-- Body redaction and recipient erasure (docs/design.md#redaction-and-erasure).
--
-- Redaction: the body of a final row past SMS_PIPELINE_REDACT_BODIES_AFTER_DAYS
-- becomes NULL; the row keeps its fingerprint (message_fingerprint), the body's
-- length in characters and when it went. Segments, units and cost stay.
-- Erasure (`messages forget`): a recipient's number becomes a marker
-- 'erased:<16 hex>' that cannot be a number (derived from the tombstone, so
-- the same number erased twice gets the same marker, and two numbers two),
-- wherever it is stored; the update guard (R__outbound_message_guards.sql)
-- allows exactly these two changes.
--
-- Adding the CHECKs scans every message partition under an ACCESS EXCLUSIVE
-- lock, and the index is built on every partition: upgrade in a quiet hour.
ALTER TABLE msg.outbound_message
    ALTER COLUMN body DROP NOT NULL,
    ADD COLUMN body_length INTEGER
        CONSTRAINT outbound_message_body_length_check CHECK (body_length > 0),
    ADD COLUMN body_redacted_at TIMESTAMPTZ,
    -- A row without a body was redacted, says how long the body was, and is
    -- final, or its recipient was erased (a submitted row still awaiting its
    -- receipt loses its body with its number).
    ADD CONSTRAINT outbound_message_body_redacted_check CHECK (
        (body IS NULL) = (body_redacted_at IS NOT NULL)
        AND (body IS NOT NULL
             OR (body_length IS NOT NULL
                 AND (state IN ('delivered', 'failed', 'rejected', 'expired', 'superseded')
                      OR recipient ~ '^erased:[0-9a-f]{16}$'))));

-- The rows redaction still has to look at, oldest first: once redacted a row
-- leaves the index, so a daily pass reads only the days that became old.
-- body is written nowhere else, so claims stay HOT updates.
CREATE INDEX outbound_message_unredacted_idx ON msg.outbound_message (created_at) WHERE body IS NOT NULL;

-- The inbox keeps a push's number only until it is erased.
ALTER TABLE dlr.receipt_push_inbox
    DROP CONSTRAINT receipt_push_inbox_recipient_check,
    ADD CONSTRAINT receipt_push_inbox_recipient_check
        CHECK (recipient ~ '^[0-9]{8,15}$' OR recipient ~ '^erased:[0-9a-f]{16}$');

-- The tombstone of an erased number: HMAC-SHA256 of its E.164 digits under
-- the text key (core/erasure.py), never the number. `messages forget` finds
-- its marker here on a second run.
CREATE TABLE msg.erased_recipients (
    recipient_hmac BYTEA       PRIMARY KEY CONSTRAINT erased_recipients_hmac_check CHECK (octet_length(recipient_hmac) = 32),
    marker         TEXT        NOT NULL UNIQUE CONSTRAINT erased_recipients_marker_check
                                   CHECK (marker ~ '^erased:[0-9a-f]{16}$'),
    erased_at      TIMESTAMPTZ NOT NULL
);

-- Every msgId an erased number was seen with, and its marker: a report row,
-- by-transaction row, getDlr row or push of one of them lands with the marker
-- instead of the number (the loads' hook, R__erasure.sql), so a re-download
-- never brings the number back. Filled by `messages forget` as it erases.
CREATE TABLE dlr.erased_message_ids (
    provider_message_id TEXT PRIMARY KEY
        CONSTRAINT erased_message_ids_clean CHECK (msg.is_clean_provider_id(provider_message_id)),
    marker              TEXT NOT NULL CONSTRAINT erased_message_ids_marker_check
                            CHECK (marker ~ '^erased:[0-9a-f]{16}$')
);
