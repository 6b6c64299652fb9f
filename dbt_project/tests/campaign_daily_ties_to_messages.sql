-- campaign_daily equals the campaign messages it was built from, to the last
-- decimal, per campaign, tenant and class over the run's days: cost and
-- units of billed rows, and every row counted once; a cost unknown on either
-- side (an unpriced billed row) is unknown on both. Shown as a check of campaign_daily.
{{ config(meta={'dagster': {'ref': {'name': 'campaign_daily'}}}) }}

with mart as (
    select campaign_id, tenant_id, message_class,
           {{ sum_of_known('cost', 'true') }} as cost, sum(billable_units) as units, sum(messages) as messages
    from {{ ref('campaign_daily') }}
    where day >= {{ first_day() }} and day <= {{ last_day() }}
    group by campaign_id, tenant_id, message_class
),
messages as (
    select campaign_id, tenant_id, message_class,
           {{ sum_of_known('cost', 'is_billed') }} as cost,
           coalesce(sum(billable_units) filter (where is_billed), 0) as units,
           count(*) as messages
    from {{ ref('int_messages__final_state') }}
    where {{ in_window('attempt_at') }}
      and message_created_at < {{ window_end() }}
      and campaign_id is not null
    group by campaign_id, tenant_id, message_class
)
select *
from mart
full join messages using (campaign_id, tenant_id, message_class)
where mart.cost is distinct from messages.cost
   or mart.units is distinct from messages.units
   or mart.messages is distinct from messages.messages
