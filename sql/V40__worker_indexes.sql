-- Indexes the send worker and its operator tools need beyond the four hot
-- access patterns of V6.

-- Upkeep: `pending` rows whose expiry passed (worker_expire_pending.sql).
-- Small: only pending rows that carry an expiry.
CREATE INDEX outbound_message_pending_expiry_idx
    ON msg.outbound_message (expires_at)
    WHERE state = 'pending' AND expires_at IS NOT NULL;

-- Operator lookups (`sms-pipeline messages show`): the attempt key is what
-- every log line carries, the recipient is what a customer complaint names.
-- Not hot, but without them a support question scans every partition.
CREATE INDEX outbound_message_attempt_key_idx
    ON msg.outbound_message (attempt_key);
CREATE INDEX outbound_message_recipient_idx
    ON msg.outbound_message (recipient, tenant_id);
