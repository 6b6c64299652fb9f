-- Requests started whose lease ran out before an outcome was written become
-- `unknown` (state_reason lease_expired), never `pending`: the request may
-- have reached the provider, so only evidence from the reports may resolve
-- them (outbound_message_lease_idx). A worker still holding one of
-- these rows finds it no longer `sending` and its conditional write matches
-- nothing.
-- Parameters: lease_expired_before (now minus the claim lease), now.
-- Returns the rows moved.
UPDATE msg.outbound_message
   SET state = 'unknown',
       state_reason = 'lease_expired',
       updated_at = %(now)s::timestamptz
 WHERE queue_state = 'claimed'  -- claimed or sending: the lease index (V73)
   AND state = 'sending'
   AND claimed_at < %(lease_expired_before)s::timestamptz
RETURNING id, created_at, claimed_at
