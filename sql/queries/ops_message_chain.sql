-- Every attempt of one message, oldest first: the active attempt (the one
-- the business key registry points at), then back through replaces_id to
-- the first. The columns are the fields of ops.messages.AttemptView, in
-- order (enums as text).
-- Parameters: tenant, business_key.
WITH RECURSIVE chain AS (
    SELECT m.* FROM msg.business_key_registry r
      JOIN msg.outbound_message m ON m.id = r.message_id AND m.created_at = r.message_created_at
     WHERE r.tenant_id = %(tenant)s AND r.business_key = %(business_key)s
    UNION ALL
    SELECT m.* FROM chain c JOIN msg.outbound_message m ON m.id = c.replaces_id
)
SELECT m.id, m.created_at, m.attempt_key, m.business_key, m.replaces_id, m.tenant_id, m.channel::text,
       m.message_class, m.recipient, m.sender_id, m.state::text, m.state_reason, m.attempt_count,
       m.provider_txn_id, m.provider_message_id, m.provider_campaign_id, m.provider_status_code,
       m.provider_cause, m.final_status, m.conflicting_final_status, m.correlation_result::text,
       m.correlation_evidence,
       m.scheduled_for, m.expires_at, m.claimed_at, m.submitted_at, m.delivered_at, m.reconciled_at,
       m.encoding, m.segments, m.billable_units, m.cost, m.cost_currency
  FROM chain m
 ORDER BY m.created_at, m.id
