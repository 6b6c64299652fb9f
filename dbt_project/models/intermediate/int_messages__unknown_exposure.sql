-- One row per message whose send outcome is unknown (possibly billed): the
-- units it would be billed for and their price, so finance sees money that
-- may have been spent before reconciliation settles it.
--
-- Priced as a confirmed submission is billed (reconcile_apply_confirm_submission.sql):
-- units = billable_units, else segments (one recipient per row), times the
-- price of msg.unit_price (the function every bill uses, the card's days in
-- the provider's zone) at the attempt time that also gives the row its day:
-- the claim, an unknown row having never been submitted (for a row handed to the
-- provider ahead of its time, its scheduled time: when the provider would send and
-- bill it). No price: NULL, never 0.
with unknown_messages as (

    select
        *,
        coalesce(billable_units, segments) as units

    from {{ ref('int_messages__final_state') }}
    where is_unknown

)

select
    unknown_messages.message_id,
    unknown_messages.message_created_at,
    unknown_messages.day,
    unknown_messages.attempt_at,
    unknown_messages.tenant_id,
    unknown_messages.channel,
    unknown_messages.message_class,
    unknown_messages.sender_id,
    unknown_messages.units,
    price.unit_price,
    price.currency::text                                        as currency,
    (unknown_messages.units * price.unit_price)::numeric(12, 4) as cost_at_risk

from unknown_messages

left join lateral msg.unit_price(
    unknown_messages.tenant_id, unknown_messages.channel::msg.message_channel, unknown_messages.message_class,
    unknown_messages.attempt_at, {{ dbt.string_literal(var('provider_timezone')) }}
) as price on true
