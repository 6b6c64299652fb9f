-- `scheduled` rows whose time has passed and whose transaction the provider will not send, never billed
-- on our word alone (docs/design.md#provider-side-campaigns). Two verdicts, one statement:
-- - campaign/read lists it `cancelled` (a cancel's schedule/delete reached the provider, perhaps before
--   its answer reached us): `expired`, reason `cancelled`, as the cancel itself writes them
--   (campaign_cancel_transaction.sql), so never `unknown`, never proved unsent and re-sent later;
-- - it lists it failed, or no longer lists it: `unknown`, reason `provider_not_sending`; a report that
--   shows them sent can still make them `submitted`, and the schedule cross-check named such
--   transactions while they were `scheduled`.
-- Conditional on `scheduled`, as the promotion and the cancel: whichever commits first has the row.
-- Parameters: now, transaction_ids, state ('expired' | 'unknown'), reason. Returns how many rows moved.
WITH moved AS (
    UPDATE msg.outbound_message
       SET state = %(state)s::msg.message_state,
           state_reason = %(reason)s,
           updated_at = %(now)s::timestamptz
     WHERE queue_state = 'scheduled'
       AND state = 'scheduled'
       AND scheduled_for <= %(now)s::timestamptz
       AND provider_txn_id = ANY(%(transaction_ids)s::text[])
    RETURNING 1
)
SELECT count(*) FROM moved
