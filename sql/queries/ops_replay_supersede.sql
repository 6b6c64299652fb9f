-- Mark the replayed attempt superseded, with the operator's reason; only if
-- it is still in the state the replay checked.
-- Parameters: id, created_at, state (as read by ops_replay_lock), state_reason, now.
UPDATE msg.outbound_message
   SET state = 'superseded', state_reason = %(state_reason)s, updated_at = %(now)s
 WHERE id = %(id)s AND created_at = %(created_at)s AND state = %(state)s::msg.message_state
