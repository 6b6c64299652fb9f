-- Provider-side campaign rows whose time has come and whose transaction the
-- provider shows sent (docs/design.md#provider-side-campaigns): campaign/read
-- lists it `completed`, or the day's report carries its transaction id. Such a
-- row becomes `submitted`, with submitted_at =
-- scheduled_for (its day, validity and health readings count from then) and
-- billed as the worker bills a submission (worker_submit.sql): units =
-- segments, cost = units x the rate-card price valid at scheduled_for
-- (msg.unit_price, the card's days in the provider's zone), NULL when no
-- price applies (unpriced, never a silent 0). One bounded batch, oldest time
-- first (outbound_message_scheduled_idx); SKIP LOCKED lets two callers (the
-- worker, reconciliation) promote side by side. Conditional on `scheduled`:
-- a row cancelled or promoted meanwhile is left as it is.
-- Parameters: now (application clock), limit, price_time_zone, transaction_ids (those shown sent).
-- Returns one row: how many rows moved and how many of them have no price.
WITH due AS (
    SELECT id, created_at
      FROM msg.outbound_message
     WHERE queue_state = 'scheduled'  -- = state; the partial index reads queue_state
       AND scheduled_for <= %(now)s::timestamptz
       AND provider_txn_id = ANY(%(transaction_ids)s::text[])
     ORDER BY scheduled_for
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
), moved AS (
    UPDATE msg.outbound_message m
       SET state = 'submitted',
           submitted_at = m.scheduled_for,
           billable_units = m.segments,
           (cost, cost_currency) = (
               SELECT m.segments * p.unit_price, p.currency
                 FROM msg.unit_price(m.tenant_id, m.channel, m.message_class,
                                     m.scheduled_for, %(price_time_zone)s) AS p),
           updated_at = %(now)s::timestamptz
      FROM due
     WHERE m.id = due.id
       AND m.created_at = due.created_at
       AND m.state = 'scheduled'
    RETURNING m.cost IS NULL AS unpriced
)
SELECT count(*) AS promoted, count(*) FILTER (WHERE unpriced) AS unpriced
  FROM moved
