-- What we were billed, per provider-local day of the send attempt, tenant,
-- channel, message class, sender id and currency; and what rows whose send
-- outcome is unknown may have cost on top.
--
-- Billing fires at submission (docs/design.md#money), so cost is summed over billed rows
-- (reached `submitted`, not rejected) whatever their delivery did later, and
-- never recomputed from delivery state. Rejected rows are counted and cost
-- nothing. A billed row without a price is unpriced: its units are reported
-- and its group's cost is NULL, never a silent zero (a row has a cost exactly
-- when it has a currency, CHECK outbound_message_cost_has_currency_check, so
-- priced and unpriced rows never share a group). An unknown row counts in the
-- currency its rate would bill it in. Money stays NUMERIC from the row to this table.
with billing as (

    select
        day, tenant_id, channel, message_class, sender_id, currency,
        is_billed, is_rejected, billable_units, cost, delivery_outcome,
        null::bigint   as unknown_message_id,
        null::integer  as unknown_units,
        null::numeric  as cost_at_risk

    from {{ ref('int_messages__final_state') }}
    where {{ in_window('attempt_at') }}
      -- an attempt never precedes its row, so later month partitions are pruned
      and message_created_at < {{ window_end() }}
      and (is_billed or is_rejected)

),

unknown_exposure as (

    select
        day, tenant_id, channel, message_class, sender_id, currency,
        false          as is_billed,
        false          as is_rejected,
        null::integer  as billable_units,
        null::numeric  as cost,
        null::text     as delivery_outcome,
        message_id     as unknown_message_id,
        units          as unknown_units,
        cost_at_risk

    from {{ ref('int_messages__unknown_exposure') }}
    where {{ in_window('attempt_at') }}
      and message_created_at < {{ window_end() }}

),

attempts as (

    select * from billing
    union all
    select * from unknown_exposure

)

select
    day,
    tenant_id,
    channel,
    message_class,
    sender_id,
    currency,
    count(*) filter (where is_billed)                                          as messages_submitted,
    coalesce(sum(billable_units) filter (where is_billed), 0)                  as billable_units,
    ({{ sum_of_known('cost', 'is_billed') }})::numeric(18, 4)                  as cost,
    count(*) filter (where is_rejected)                                        as rejected_messages,
    coalesce(sum(billable_units) filter (where is_billed and cost is null), 0) as unpriced_units,
    ({{ sum_of_known('cost', "is_billed and delivery_outcome in ('failed', 'expired')") }})::numeric(18, 4)
                                                                               as cost_of_failed,
    count(unknown_message_id)                                                  as unknown_messages,
    coalesce(sum(unknown_units), 0)                                            as unknown_units,
    ({{ sum_of_known('cost_at_risk', 'unknown_message_id is not null') }})::numeric(18, 4)
                                                                               as unknown_cost_at_risk

from attempts
group by day, tenant_id, channel, message_class, sender_id, currency
