-- The billed rows of each campaign_daily group over the run's days share one
-- currency, so its cost is one amount. Shown as a check of campaign_daily.
{{ config(meta={'dagster': {'ref': {'name': 'campaign_daily'}}}) }}

with mart as (
    select day, campaign_id, tenant_id, message_class
    from {{ ref('campaign_daily') }}
    where day >= {{ first_day() }} and day <= {{ last_day() }}
),
billed as (
    select day, campaign_id, tenant_id, message_class, currency
    from {{ ref('int_messages__final_state') }}
    where {{ in_window('attempt_at') }}
      and message_created_at < {{ window_end() }}
      and campaign_id is not null
      and is_billed
)
select day, campaign_id, tenant_id, message_class, count(distinct billed.currency) as currencies
from mart
join billed using (day, campaign_id, tenant_id, message_class)
group by day, campaign_id, tenant_id, message_class
having count(distinct billed.currency) > 1
