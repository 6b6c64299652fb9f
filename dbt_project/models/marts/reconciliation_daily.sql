-- Reconciliation health, one row per provider-local day of the window even
-- when nothing happened that day (a missing row would look like a gap, not a
-- zero, to anything alerting on it).
--   receipts: events by the provider-local day of their provider submit time,
--     broken down by correlation result, plus conflicting finals;
--   orphans: opened on the day they reached us, resolved on the day they were
--     resolved, and how many of the day's orphans are still open now;
--   messages: by the day of their send attempt, rows still `unknown` and rows
--     proved never submitted.
with days as (

    select generate_series({{ first_day() }}, {{ last_day() }}, interval '1 day')::date as day

),

receipts as (

    select
        {{ local_day('provider_submit_at') }} as day,
        correlation_result,
        disposition
    from {{ ref('stg_dlr__delivery_receipts') }}
    where {{ in_window('provider_submit_at') }}

),

receipt_counts as (

    select
        day,
        count(*)                                                    as receipts,
        count(*) filter (where correlation_result = 'matched')      as matched,
        count(*) filter (where correlation_result = 'not_found')    as not_found,
        count(*) filter (where correlation_result = 'ambiguous')    as ambiguous,
        count(*) filter (where disposition = 'conflicting_final')   as conflicting_finals
    from receipts
    group by day

),

orphans_by_received_day as (

    select
        {{ local_day('received_at') }}              as day,
        count(*)                                    as orphans_opened,
        count(*) filter (where resolved_at is null) as orphans_open
    from {{ ref('stg_dlr__orphaned_receipts') }}
    where {{ in_window('received_at') }}
    group by 1

),

orphans_by_resolved_day as (

    select
        {{ local_day('resolved_at') }}  as day,
        count(*)                        as orphans_resolved
    from {{ ref('stg_dlr__orphaned_receipts') }}
    where {{ in_window('resolved_at') }}
    group by 1

),

message_counts as (

    select
        day,
        count(*) filter (where is_unknown)          as unknown_rows_open,
        count(*) filter (where is_not_submitted)    as not_submitted
    from {{ ref('int_messages__final_state') }}
    where {{ in_window('attempt_at') }}
      and message_created_at < {{ window_end() }}
      and (is_unknown or is_not_submitted)
    group by day

)

select
    days.day,
    coalesce(receipt_counts.receipts, 0)                as receipts,
    coalesce(receipt_counts.matched, 0)                 as matched,
    coalesce(receipt_counts.not_found, 0)               as not_found,
    coalesce(receipt_counts.ambiguous, 0)               as ambiguous,
    coalesce(orphans_by_received_day.orphans_opened, 0) as orphans_opened,
    coalesce(orphans_by_resolved_day.orphans_resolved, 0) as orphans_resolved,
    coalesce(orphans_by_received_day.orphans_open, 0)   as orphans_open,
    coalesce(message_counts.unknown_rows_open, 0)       as unknown_rows_open,
    coalesce(receipt_counts.conflicting_finals, 0)      as conflicting_finals,
    coalesce(message_counts.not_submitted, 0)           as not_submitted

from days
left join receipt_counts using (day)
left join orphans_by_received_day using (day)
left join orphans_by_resolved_day using (day)
left join message_counts using (day)
