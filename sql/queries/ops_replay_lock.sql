-- The row an operator asked to replay, locked for the replay's transaction
-- (no worker or reconciliation moves it meanwhile). No row: no such id.
-- Parameters: id.
SELECT id, created_at, state::text, message_class FROM msg.outbound_message WHERE id = %(id)s FOR UPDATE
