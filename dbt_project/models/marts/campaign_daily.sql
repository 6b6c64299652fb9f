-- Each campaign's messages per provider-local day of the send attempt (the
-- day rule of cost_daily, int_messages__final_state: a provider-side row
-- counts on the day it is due, also while the provider holds it `scheduled`),
-- tenant and message class: what was sent, what it cost, how it ended.
--
-- Cost is billed rows' cost as in cost_daily (billing at submission,
-- docs/design.md#money; NULL when one is unpriced, never 0), so the two marts
-- tie out. A campaign's rows are priced in one currency (one rate card); the
-- test campaign_daily_one_currency fails the day that is not so.
-- Outcomes: a row that never left (cancelled, expired unsent, rejected) is
-- counted by that, not billed; pending is everything not yet final,
-- `scheduled` rows held by the provider and `unknown` ones included.
with messages as (

    select * from {{ ref('int_messages__final_state') }}
    where {{ in_window('attempt_at') }}
      and message_created_at < {{ window_end() }}
      and campaign_id is not null

),

campaigns as (

    select * from {{ ref('stg_msg__campaigns') }}

),

counted as (

    select
        messages.day,
        messages.campaign_id,
        campaigns.campaign_name,
        messages.tenant_id,
        messages.message_class,
        min(messages.currency)                                                  as currency,
        count(*)                                                                as messages,
        count(*) filter (where messages.is_billed)                              as submitted,
        coalesce(sum(messages.billable_units) filter (where messages.is_billed), 0) as billable_units,
        ({{ sum_of_known('messages.cost', 'messages.is_billed') }})::numeric(18, 4) as cost,
        count(*) filter (where messages.delivery_outcome = 'delivered')         as delivered,
        count(*) filter (where messages.delivery_outcome = 'failed'
                           or (not messages.is_billed and messages.state = 'failed'))  as failed,
        count(*) filter (where messages.delivery_outcome = 'expired'
                           or (not messages.is_billed and messages.state = 'expired'
                               and messages.state_reason is distinct from 'cancelled')) as expired,
        count(*) filter (where not messages.is_billed and messages.state = 'expired'
                           and messages.state_reason = 'cancelled')             as cancelled,
        count(*) filter (where messages.is_rejected)                            as rejected,
        count(*) filter (where messages.delivery_outcome = 'still_pending'
                           or messages.state in ('pending', 'claimed', 'sending', 'scheduled', 'unknown'))
                                                                                as pending,
        percentile_disc(0.50) within group (order by messages.latency_seconds)  as median_latency_seconds

    from messages
    inner join campaigns on campaigns.campaign_id = messages.campaign_id
    group by messages.day, messages.campaign_id, campaigns.campaign_name, messages.tenant_id, messages.message_class

)

select
    *,
    -- the denominator is everything submitted, as in delivery_by_class_daily
    round(delivered::numeric / nullif(submitted, 0), 4) as delivery_ratio

from counted
