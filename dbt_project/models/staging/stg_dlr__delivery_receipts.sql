-- One row per receipt event (provider msgId, normalised status word).
with source as (

    select * from {{ source('dlr', 'delivery_receipts') }}

),

renamed as (

    select
        receipt_id,
        submit_month,
        provider_message_id,
        status_word,
        outcome,
        provider_submit_at,
        provider_done_at,
        first_seen_at,
        source                      as receipt_source,
        message_id,
        message_created_at,
        correlation_result::text    as correlation_result,
        disposition

    from source

)

select * from renamed
