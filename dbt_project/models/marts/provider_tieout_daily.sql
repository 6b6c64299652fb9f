-- Our billable SMS units against the units the provider billed
-- (/report/summary, groupby=senderid), per provider-local day and sender id.
-- difference = provider - ours; `not_fetched` when the provider's summary of
-- that day has not been fetched (then there is nothing to compare, and the
-- difference is null rather than a made-up number). A sender either side has
-- and the other lacks counts as zero on the other side.
with ours as (

    select
        day,
        sender_id,
        sum(billable_units) as our_units
    from {{ ref('int_messages__final_state') }}
    where {{ in_window('attempt_at') }}
      and message_created_at < {{ window_end() }}
      and is_billed
      and channel = 'sms'
    group by day, sender_id

),

theirs as (

    select day, sender_id, provider_units
    from {{ ref('stg_dlr__provider_summaries') }}
    where day >= {{ first_day() }} and day <= {{ last_day() }}

),

fetched_days as (

    select day
    from {{ ref('stg_dlr__provider_summary_fetches') }}
    where day >= {{ first_day() }} and day <= {{ last_day() }}

),

-- union + group rather than a full join: a null sender id must meet itself
both_sides as (

    select day, sender_id, our_units, null::bigint as provider_units from ours
    union all
    select day, sender_id, null::bigint, provider_units from theirs

),

per_sender as (

    select
        day,
        sender_id,
        coalesce(sum(our_units), 0)         as our_units,
        coalesce(sum(provider_units), 0)    as reported_units
    from both_sides
    group by day, sender_id

),

compared as (

    select
        per_sender.day,
        per_sender.sender_id,
        per_sender.our_units,
        case when fetched_days.day is not null then per_sender.reported_units end as provider_units
    from per_sender
    left join fetched_days using (day)

)

select
    day,
    sender_id,
    our_units,
    provider_units,
    provider_units - our_units as difference,
    case
        when provider_units is null then 'not_fetched'
        when provider_units = our_units then 'match'
        else 'mismatch'
    end as status

from compared
