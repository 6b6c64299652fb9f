-- What we were billed, per provider-local day of the send attempt, tenant,
-- channel, message class, sender id and currency.
--
-- Billing fires at submission (docs/design.md#money), so cost is summed over billed rows
-- (reached `submitted`, not rejected) whatever their delivery did later, and
-- never recomputed from delivery state. Rejected rows are counted and cost
-- nothing. A billed row without a price is unpriced: its units are reported,
-- never a silent zero. Money stays NUMERIC from the row to this table.
with messages as (

    select * from {{ ref('int_messages__final_state') }}
    where {{ in_window('attempt_at') }}
      -- an attempt never precedes its row, so later month partitions are pruned
      and message_created_at < {{ window_end() }}

)

select
    day,
    tenant_id,
    channel,
    message_class,
    sender_id,
    currency,
    count(*) filter (where is_billed)                                        as messages_submitted,
    coalesce(sum(billable_units) filter (where is_billed), 0)                as billable_units,
    coalesce(sum(cost) filter (where is_billed), 0)::numeric(18, 4)          as cost,
    count(*) filter (where is_rejected)                                      as rejected_messages,
    coalesce(sum(billable_units) filter (where is_billed and cost is null), 0) as unpriced_units,
    coalesce(
        sum(cost) filter (where is_billed and delivery_outcome in ('failed', 'expired')), 0
    )::numeric(18, 4)                                                        as cost_of_failed

from messages
where is_billed or is_rejected
group by day, tenant_id, channel, message_class, sender_id, currency
