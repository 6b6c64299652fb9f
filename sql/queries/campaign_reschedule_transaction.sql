-- After the provider moved a transaction's schedule to `at`: its rows of
-- the campaign get that time, and expires_at moves by as much. Guarded by
-- the state and by the time already at `at`, as campaign_reschedule_pending.sql
-- (the caller has checked the transaction's own time).
-- Parameters: campaign_id, txn_id (the uuId), at, now.
UPDATE msg.outbound_message
   SET expires_at = expires_at + (%(at)s::timestamptz - scheduled_for),
       scheduled_for = %(at)s::timestamptz,
       updated_at = %(now)s
 WHERE campaign_id = %(campaign_id)s AND provider_txn_id = %(txn_id)s AND queue_state = 'scheduled'  -- = state
   AND scheduled_for IS DISTINCT FROM %(at)s::timestamptz
