-- One row per campaign of ours: its name and when it is to be sent.
with source as (

    select * from {{ source('msg', 'campaign') }}

),

renamed as (

    select
        id              as campaign_id,
        name            as campaign_name,
        provider_side,
        scheduled_for,
        cancelled_at

    from source

)

select * from renamed
