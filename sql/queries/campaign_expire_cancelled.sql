-- `scheduled` rows whose time has passed and whose transaction campaign/read lists `cancelled`: the
-- provider says it will not send them (a cancel's schedule/delete reached it), so they are `expired`,
-- reason `cancelled`, as the cancel itself writes them (campaign_cancel_transaction.sql): never billed,
-- never `unknown`, so never proved unsent and re-sent later (docs/design.md#cancel-and-reschedule).
-- Needed because the worker's settle pass can read the provider's `cancelled` before the cancel command,
-- whose answer came late, writes its rows. Conditional on `scheduled`, as the promotion and the cancel:
-- whichever commits first has the row.
-- Parameters: now, transaction_ids. Returns how many rows moved.
WITH moved AS (
    UPDATE msg.outbound_message
       SET state = 'expired',
           state_reason = 'cancelled',
           updated_at = %(now)s::timestamptz
     WHERE queue_state = 'scheduled'
       AND state = 'scheduled'
       AND scheduled_for <= %(now)s::timestamptz
       AND provider_txn_id = ANY(%(transaction_ids)s::text[])
    RETURNING 1
)
SELECT count(*) FROM moved
