-- After the provider deleted a transaction's schedule: its rows of the
-- campaign, scheduled -> expired, reason cancelled. Never billed (nothing
-- was sent; submitted_at and cost stay empty). Guarded by the state: the
-- worker's promotion (campaign_promote.sql, campaign_settle_unsent.sql) is
-- conditional on `scheduled` too, so whichever commits first wins the row and
-- the other, re-checking the row it waited for, leaves it: a row is never
-- both cancelled and promoted (and the provider, which deleted this
-- schedule, does not list it sent, so the worker would not promote it).
-- Parameters: campaign_id, txn_id (the uuId), now.
UPDATE msg.outbound_message
   SET state = 'expired', state_reason = 'cancelled', updated_at = %(now)s
 WHERE campaign_id = %(campaign_id)s AND provider_txn_id = %(txn_id)s AND queue_state = 'scheduled'  -- = state
