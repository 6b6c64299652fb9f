-- One row per outbound message attempt; routing, state, clocks and money only
-- (no recipient, no body: nothing downstream needs them).
with source as (

    select * from {{ source('msg', 'outbound_message') }}

),

renamed as (

    select
        id                          as message_id,
        created_at                  as message_created_at,
        tenant_id,
        channel::text               as channel,
        message_class,
        sender_id,
        encoding,
        segments::integer           as segments,
        state::text                 as state,
        state_reason,
        final_status,
        conflicting_final_status,
        correlation_result::text    as correlation_result,
        claimed_at,
        submitted_at,
        delivered_at,
        billable_units::integer     as billable_units,
        cost,
        cost_currency::text         as currency,
        campaign_id,
        scheduled_for

    from source

)

select * from renamed
