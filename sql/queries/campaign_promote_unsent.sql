-- `scheduled` rows whose time has passed but whose transaction the provider does not show sent or still to
-- send (campaign/read lists it failed, or no longer lists it; `cancelled` is campaign_expire_cancelled.sql's):
-- `unknown`, reason
-- `provider_not_sending`, never billed on our word alone. Evidence (a report showing them sent) can still
-- make them `submitted`; the schedule cross-check names such transactions while they were `scheduled`.
-- Conditional on `scheduled`.
-- Parameters: now, transaction_ids. Returns how many rows moved.
WITH moved AS (
    UPDATE msg.outbound_message
       SET state = 'unknown',
           state_reason = 'provider_not_sending',
           updated_at = %(now)s::timestamptz
     WHERE queue_state = 'scheduled'
       AND state = 'scheduled'
       AND scheduled_for <= %(now)s::timestamptz
       AND provider_txn_id = ANY(%(transaction_ids)s::text[])
    RETURNING 1
)
SELECT count(*) FROM moved
