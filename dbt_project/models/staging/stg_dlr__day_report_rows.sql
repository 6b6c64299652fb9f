-- The provider's day report as loaded, one row per report line: which
-- message it billed, under which sender id, for how many units. Cleaned as
-- reconciliation cleans it (reconcile_receipts_normalise.sql), so a msgId
-- here is the one its receipt event is stored under. No recipient, no text.
with source as (

    select * from {{ source('dlr', 'day_report_rows') }}

),

renamed as (

    select
        report_date                 as day,
        line_no,
        case when msg.is_clean_provider_id(btrim(msg_id)) then btrim(msg_id) end as provider_message_id,
        nullif(btrim(sender_name), '')                                          as sender_id,
        -- a units field that is not a number is unreadable: null, never a guess
        case when btrim(units) ~ '^[0-9]{1,4}$' then btrim(units)::integer end  as units,
        provider_submit_at

    from source

)

select * from renamed
