-- The itemised tie-out, per provider-local day and sender id
-- (docs/design.md#tie-out). Every message of the provider's day report and
-- every billed SMS row of ours falls in exactly one bucket (or, a message
-- nobody can place, in the residual):
--   matched         a report message matched to a billed row of ours (same day
--                   and sender id), equal units
--   units_differ    the same, with different units
--   provider_only   a report message with no billed row of ours to match it:
--                   an orphan (not_found), an ambiguous receipt when no
--                   ambiguous row of that day and sender is billed, or a
--                   match to a row we do not count on that day and sender
--   ours_only       a billed row of ours no report message of its day and
--                   sender matches
--   ambiguous       ambiguous receipts of a day and sender that does have
--                   billed ambiguous rows, and those rows: we cannot say
--                   which row the provider billed (correlation never guesses)
-- Then, provider_units being the provider's /report/summary figure (what it bills):
--   provider_units - our_units
--     = units_differ_units + provider_only_units - ours_only_units + ambiguous_units
--       + summary_minus_report_units + residual
-- The buckets itemise the day report against our rows; summary_minus_report_units
-- is the provider's two figures disagreeing with each other (its summary
-- against its own day report), named on its own line. The residual is what
-- nothing explains: the units of report messages nobody can place (no usable
-- msgId, no receipt event); unplaced_messages counts them, and also lines
-- whose units cannot be read (their units are unknown, so they cannot be in
-- the residual; the row they match counts as ours-only). A day whose summary is
-- not fetched or whose day report is not loaded compares nothing: its
-- figures from that side are null, never zero.
with provider_messages as (

    -- one per msgId of the day (a repeated report line counts once); a line
    -- without a usable msgId stays on its own
    select distinct on (day, provider_message_id, case when provider_message_id is null then line_no end)
        day,
        sender_id,
        provider_message_id,
        units
    from {{ ref('stg_dlr__day_report_rows') }}
    where day >= {{ first_day() }} and day <= {{ last_day() }}
    order by day, provider_message_id, case when provider_message_id is null then line_no end, line_no

),

correlations as (

    -- what reconciliation decided for each msgId: its row if matched, else
    -- ambiguous, else not_found (an orphan). Receipts sit on the provider's
    -- submit time; a day either side reaches a report line filed on the
    -- neighbouring day.
    select distinct on (provider_message_id)
        provider_message_id,
        message_id,
        message_created_at,
        correlation_result
    from {{ ref('stg_dlr__delivery_receipts') }}
    where provider_submit_at >= {{ window_start() }} - interval '1 day'
      and provider_submit_at < {{ window_end() }} + interval '1 day'
    order by provider_message_id, message_id is null, correlation_result = 'not_found', receipt_id

),

billed as (

    select
        message_id,
        message_created_at,
        day,
        sender_id,
        billable_units,
        cost,
        correlation_result
    from {{ ref('int_messages__final_state') }}
    where {{ in_window('attempt_at') }}
      and message_created_at < {{ window_end() }}
      and channel = 'sms'
      and is_billed

),

-- days and senders with a billed ambiguous row: an ambiguous receipt there
-- may be for one of them (a candidate shares the receipt's sender and lies
-- within the correlation window, so at this grain on its day). '' stands for
-- no sender id so that the join hashes.
ambiguous_billed as (

    select distinct day, coalesce(sender_id, '') as sender_key
    from billed
    where correlation_result = 'ambiguous'

),

-- possibly billed, not yet counted as ours: beside the equation
unknown_units as (

    select day, sender_id, sum(units) as unknown_units
    from {{ ref('int_messages__unknown_exposure') }}
    where {{ in_window('attempt_at') }}
      and message_created_at < {{ window_end() }}
      and channel = 'sms'
    group by day, sender_id

),

placed_provider_messages as (

    select
        provider_messages.day,
        provider_messages.sender_id,
        provider_messages.units,
        billed.message_id           as matched_message_id,
        billed.message_created_at   as matched_message_created_at,
        coalesce(provider_messages.units, 0) - coalesce(billed.billable_units, 0) as unit_gap,
        case
            -- units that cannot be read: the line cannot be placed
            when provider_messages.units is null then null
            when billed.day = provider_messages.day
                 and billed.sender_id is not distinct from provider_messages.sender_id
                then case when provider_messages.units = billed.billable_units then 'matched' else 'units_differ' end
            when correlations.correlation_result = 'ambiguous' and ambiguous_billed.day is not null
                then 'ambiguous'
            when correlations.correlation_result is not null then 'provider_only'
            -- no usable msgId or no receipt event: nobody can place it (residual)
        end as bucket
    from provider_messages
    left join correlations using (provider_message_id)
    left join billed
        on billed.message_id = correlations.message_id
       and billed.message_created_at = correlations.message_created_at
    left join ambiguous_billed
        on ambiguous_billed.day = provider_messages.day
       and ambiguous_billed.sender_key = coalesce(provider_messages.sender_id, '')

),

placed_ours as (

    select
        billed.day,
        billed.sender_id,
        billed.billable_units,
        billed.cost,
        case
            when exists (select 1 from placed_provider_messages as pair
                         where pair.bucket in ('matched', 'units_differ')
                           and pair.matched_message_id = billed.message_id
                           and pair.matched_message_created_at = billed.message_created_at)
                then 'matched'
            when billed.correlation_result = 'ambiguous' then 'ambiguous'
            else 'ours_only'
        end as bucket
    from billed

),

-- union + group rather than a full join: a null sender id must meet itself
both_sides as (

    select
        day, sender_id,
        units                                                           as report_units,
        null::integer                                                   as our_units,
        (bucket = 'matched')::integer                                   as matched_messages,
        case when bucket = 'matched' then units end                     as matched_units,
        (bucket = 'units_differ')::integer                              as units_differ_messages,
        case when bucket = 'units_differ' then unit_gap end             as units_differ_units,
        (bucket = 'provider_only')::integer                             as provider_only_messages,
        case when bucket = 'provider_only' then units end               as provider_only_units,
        0                                                               as ours_only_messages,
        null::integer                                                   as ours_only_units,
        (bucket = 'ambiguous')::integer                                 as ambiguous_provider_messages,
        0                                                               as ambiguous_our_messages,
        case when bucket = 'ambiguous' then units end                   as ambiguous_units,
        (bucket is null)::integer                                       as unplaced_messages,
        null::integer                                                   as unpriced_units,
        null::bigint                                                    as unknown_units
    from placed_provider_messages

    union all

    select
        day, sender_id,
        null, billable_units,
        0, null, 0, null, 0, null,
        (bucket = 'ours_only')::integer,
        case when bucket = 'ours_only' then billable_units end,
        0,
        (bucket = 'ambiguous')::integer,
        case when bucket = 'ambiguous' then -billable_units end,
        0,
        case when cost is null then billable_units end,
        null
    from placed_ours

    union all

    select day, sender_id, null, null, 0, null, 0, null, 0, null, 0, null, 0, 0, null, 0, null, unknown_units
    from unknown_units

    union all

    -- a sender only the summary has still gets its row
    select day, sender_id, null, null, 0, null, 0, null, 0, null, 0, null, 0, 0, null, 0, null, null
    from {{ ref('stg_dlr__provider_summaries') }}
    where day >= {{ first_day() }} and day <= {{ last_day() }}

),

per_sender as (

    select
        day,
        sender_id,
        coalesce(sum(our_units), 0)                     as our_units,
        coalesce(sum(report_units), 0)                  as report_units,
        coalesce(sum(matched_messages), 0)              as matched_messages,
        coalesce(sum(matched_units), 0)                 as matched_units,
        coalesce(sum(units_differ_messages), 0)         as units_differ_messages,
        coalesce(sum(units_differ_units), 0)            as units_differ_units,
        coalesce(sum(provider_only_messages), 0)        as provider_only_messages,
        coalesce(sum(provider_only_units), 0)           as provider_only_units,
        coalesce(sum(ours_only_messages), 0)            as ours_only_messages,
        coalesce(sum(ours_only_units), 0)               as ours_only_units,
        coalesce(sum(ambiguous_provider_messages), 0)   as ambiguous_provider_messages,
        coalesce(sum(ambiguous_our_messages), 0)        as ambiguous_our_messages,
        coalesce(sum(ambiguous_units), 0)               as ambiguous_units,
        coalesce(sum(unplaced_messages), 0)             as unplaced_messages,
        coalesce(sum(unknown_units), 0)::bigint         as unknown_units,
        coalesce(sum(unpriced_units), 0)                as unpriced_units
    from both_sides
    group by day, sender_id

),

summaries as (

    select day, sender_id, provider_units
    from {{ ref('stg_dlr__provider_summaries') }}
    where day >= {{ first_day() }} and day <= {{ last_day() }}

),

summary_days as (

    select day
    from {{ ref('stg_dlr__provider_summary_fetches') }}
    where day >= {{ first_day() }} and day <= {{ last_day() }}

),

-- a loaded report whose rows retention dropped can no longer be itemised
report_days as (

    select day
    from {{ ref('stg_dlr__report_loads') }} as loads
    where report_kind = 'day'
      and loaded_at is not null
      and day >= {{ first_day() }} and day <= {{ last_day() }}
      and (report_rows = 0 or exists (select 1 from {{ ref('stg_dlr__day_report_rows') }} as kept
                                      where kept.day = loads.day))

),

compared as (

    select
        per_sender.*,
        summary_days.day is not null    as summary_fetched,
        report_days.day is not null     as day_report_loaded,
        case when summary_days.day is not null then coalesce(summaries.provider_units, 0) end as provider_units
    from per_sender
    left join summaries
        on summaries.day = per_sender.day
       and summaries.sender_id is not distinct from per_sender.sender_id
    left join summary_days on summary_days.day = per_sender.day
    left join report_days on report_days.day = per_sender.day

),

-- the report side's figures mean nothing without its report
equation as (

    select
        day,
        sender_id,
        provider_units,
        our_units,
        provider_units - our_units                                          as difference,
        case when day_report_loaded then report_units end                   as day_report_units,
        case when day_report_loaded then matched_messages end               as matched_messages,
        case when day_report_loaded then matched_units end                  as matched_units,
        case when day_report_loaded then units_differ_messages end          as units_differ_messages,
        case when day_report_loaded then units_differ_units end             as units_differ_units,
        case when day_report_loaded then provider_only_messages end         as provider_only_messages,
        case when day_report_loaded then provider_only_units end            as provider_only_units,
        case when day_report_loaded then ours_only_messages end             as ours_only_messages,
        case when day_report_loaded then ours_only_units end                as ours_only_units,
        case when day_report_loaded then ambiguous_provider_messages end    as ambiguous_provider_messages,
        case when day_report_loaded then ambiguous_our_messages end         as ambiguous_our_messages,
        case when day_report_loaded then ambiguous_units end                as ambiguous_units,
        case when day_report_loaded then unplaced_messages end              as unplaced_messages,
        unknown_units,
        unpriced_units,
        summary_fetched,
        day_report_loaded
    from compared

),

explained as (

    select
        *,
        provider_units - day_report_units as summary_minus_report_units,
        -- = (day report - ours) - buckets: the summary's own disagreement is not in it
        day_report_units - our_units
            - (units_differ_units + provider_only_units - ours_only_units + ambiguous_units) as residual
    from equation

)

select
    day,
    sender_id,
    provider_units,
    day_report_units,
    our_units,
    difference,
    matched_messages,
    matched_units,
    units_differ_messages,
    units_differ_units,
    provider_only_messages,
    provider_only_units,
    ours_only_messages,
    ours_only_units,
    ambiguous_provider_messages,
    ambiguous_our_messages,
    ambiguous_units,
    summary_minus_report_units,
    residual,
    unplaced_messages,
    unknown_units,
    unpriced_units,
    case
        -- what the day report shows that nobody can place is a mismatch, summary or not
        when not day_report_loaded then 'day_report_not_loaded'
        when residual <> 0 or unplaced_messages > 0 then 'mismatch'
        when not summary_fetched then 'summary_not_fetched'
        when units_differ_messages + provider_only_messages + ours_only_messages
             + ambiguous_provider_messages + ambiguous_our_messages > 0
             or summary_minus_report_units <> 0 then 'explained'
        else 'ok'
    end as status

from explained
