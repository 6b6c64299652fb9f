-- `pending` rows whose expires_at has passed become `expired`: a scheduled
-- send whose window closed while no worker ran is counted, never sent late
-- (the claim skips such rows as well). Index: outbound_message_pending_expiry_idx.
-- Parameters: now (application clock).
-- Returns the rows moved.
UPDATE msg.outbound_message
   SET state = 'expired',
       state_reason = 'expired_unsent',
       updated_at = %(now)s::timestamptz
 WHERE queue_state = 'pending'  -- = state; the partial indexes read queue_state (V73)
   AND expires_at IS NOT NULL
   AND expires_at <= %(now)s::timestamptz
RETURNING id, created_at, attempt_key
