-- Days whose provider summary was fetched (a fetched day may have no sender rows).
with source as (

    select * from {{ source('dlr', 'provider_summary_fetch') }}

),

renamed as (

    select
        day,
        fetched_at,
        sender_rows

    from source

)

select * from renamed
