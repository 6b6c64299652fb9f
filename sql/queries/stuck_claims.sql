-- Claims whose lease ran out become `unknown`, never `pending`: the send may
-- have left the process, so only evidence may resolve them (access pattern
-- 2: outbound_message_stuck_claims_idx). A worker still holding one of these
-- rows finds it no longer `claimed` and its conditional write matches nothing.
-- Parameters: lease_expired_before (now minus the claim lease), now.
-- Returns the rows moved.
UPDATE msg.outbound_message
   SET state = 'unknown',
       state_reason = 'lease_expired',
       updated_at = %(now)s::timestamptz
 WHERE state = 'claimed'
   AND claimed_at < %(lease_expired_before)s::timestamptz
RETURNING id, created_at, claimed_at
