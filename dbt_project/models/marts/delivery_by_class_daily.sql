-- Delivery outcome counts per provider-local day of the send attempt,
-- channel, message class and sender id. The denominator of both ratios is
-- everything submitted (docs/design.md#health-checks): with delivered + failed as denominator a
-- dead receipt pipeline would freeze the ratio at a healthy value.
-- `unknown` rows may or may not have reached the provider; they are counted
-- beside the submitted ones, not inside them.
with messages as (

    select * from {{ ref('int_messages__final_state') }}
    where {{ in_window('attempt_at') }}
      and message_created_at < {{ window_end() }}
      and (is_billed or is_unknown)

),

counted as (

    select
        day,
        channel,
        message_class,
        sender_id,
        count(*) filter (where is_billed)                           as submitted,
        count(*) filter (where delivery_outcome = 'delivered')      as delivered,
        count(*) filter (where delivery_outcome = 'failed')         as failed,
        count(*) filter (where delivery_outcome = 'expired')        as expired,
        count(*) filter (where delivery_outcome = 'still_pending')  as still_pending,
        count(*) filter (where is_unknown)                          as unknown

    from messages
    group by day, channel, message_class, sender_id

)

select
    *,
    round(delivered::numeric / nullif(submitted, 0), 4)         as delivery_rate,
    round(still_pending::numeric / nullif(submitted, 0), 4)     as still_pending_ratio

from counted
