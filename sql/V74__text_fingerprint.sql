-- Correlation by text fingerprint (docs/design.md#correlation).
--
-- The report loads kept an unkeyed SHA-256 of the message text: over a
-- 6-digit OTP text that is no protection (a million guesses). They keep
-- instead the keyed HMAC of the text's normal form (sms_pipeline/core/
-- fingerprint.py), and every outbound row keeps the same HMAC of the text
-- it sent, so reconstruction can tell two messages to one number apart.
--
-- The old digests are dropped, not converted (the text is gone): every
-- checkpoint without a fingerprint key id is reloaded once by the next
-- load of its day, since the no-op of an unchanged download also requires
-- the stored key id to equal the current one.
--
-- Adding a column with a CHECK scans every partition of the report and
-- receipt tables and of msg.outbound_message (dropping message_sha256 does
-- not rewrite), each under an ACCESS EXCLUSIVE lock for the length of its
-- scan: upgrade in a quiet hour.
ALTER TABLE dlr.day_report_rows
    DROP COLUMN message_sha256,
    ADD COLUMN message_fingerprint BYTEA
        CONSTRAINT day_report_rows_message_fingerprint_check CHECK (octet_length(message_fingerprint) = 32);

COMMENT ON TABLE dlr.day_report_rows IS
    'Raw day-report rows, message text only as message_fingerprint (keyed HMAC). Partitions '
    'dlr.day_report_rows_YYYYMMDD from dlr.ensure_day_report_partition(date).';

ALTER TABLE dlr.getdlr_rows
    DROP COLUMN message_sha256,
    ADD COLUMN message_fingerprint BYTEA
        CONSTRAINT getdlr_rows_message_fingerprint_check CHECK (octet_length(message_fingerprint) = 32);

-- Which key (and fingerprint version) the stored rows of the load were made with; NULL: before fingerprints.
ALTER TABLE dlr.report_checkpoints
    ADD COLUMN fingerprint_key_id TEXT
        CONSTRAINT report_checkpoints_fingerprint_key_id_check CHECK (fingerprint_key_id ~ '^v[0-9]+:[0-9a-f]{16}$');

-- Carried with each stored receipt event: a stored orphan is tried again on every run.
ALTER TABLE dlr.delivery_receipts
    ADD COLUMN message_fingerprint BYTEA
        CONSTRAINT delivery_receipts_message_fingerprint_check CHECK (octet_length(message_fingerprint) = 32);

-- message_fingerprint: of the text sent (set at intake for a fixed body, at
-- the outcome for an OTP, whose code exists only at send time).
-- provider_created_at: the OTP answer's createTime.
-- correlation_evidence: what a match rested on; only on matched rows.
-- None of them is indexed: the claimed -> sending step stays a HOT update.
ALTER TABLE msg.outbound_message
    ADD COLUMN message_fingerprint BYTEA
        CONSTRAINT outbound_message_message_fingerprint_check CHECK (octet_length(message_fingerprint) = 32),
    ADD COLUMN provider_created_at TIMESTAMPTZ,
    ADD COLUMN correlation_evidence TEXT
        CONSTRAINT outbound_message_correlation_evidence_check
            CHECK (correlation_evidence IS NULL
                   OR (correlation_evidence IN ('msgid', 'transaction', 'fingerprint', 'reconstruction')
                       AND correlation_result IS NOT DISTINCT FROM 'matched'));
