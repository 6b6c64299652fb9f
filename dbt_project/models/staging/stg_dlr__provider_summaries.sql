-- The provider's /report/summary figures, one row per provider-local day and sender id.
with source as (

    select * from {{ source('dlr', 'provider_summary') }}

),

renamed as (

    select
        day,
        nullif(sender_id, '')   as sender_id,
        total_messages,
        delivered       as delivered_messages,
        failed          as failed_messages,
        pending         as pending_messages,
        units           as provider_units

    from source

)

select * from renamed
