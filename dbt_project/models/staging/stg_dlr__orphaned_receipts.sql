-- Receipts no correlation pass could match; the raw payload stays upstream.
with source as (

    select * from {{ source('dlr', 'orphaned_receipts') }}

),

renamed as (

    select
        orphan_id,
        provider_message_id,
        status_word,
        source          as receipt_source,
        received_at,
        resolved_at,
        created_at      as opened_at

    from source

)

select * from renamed
