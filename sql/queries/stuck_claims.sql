-- Claims whose lease ran out before their request was started go back to
-- `pending` (state_reason lease_expired_unsent): a `claimed` row provably
-- never left, since a request's rows move to `sending` before it goes out
-- (worker_start_request.sql), so the next worker sends it (access pattern 2:
-- outbound_message_lease_idx). A worker still holding one of these
-- rows finds it no longer `claimed` and does not send it.
-- Parameters: lease_expired_before (now minus the claim lease), now.
-- Returns the rows moved.
UPDATE msg.outbound_message
   SET state = 'pending',
       state_reason = 'lease_expired_unsent',
       updated_at = %(now)s::timestamptz
 WHERE queue_state = 'claimed'  -- claimed or sending: the lease index (V73)
   AND state = 'claimed'
   AND claimed_at < %(lease_expired_before)s::timestamptz
RETURNING id, created_at, claimed_at
