-- Reports fetched and loaded, per kind and provider-local day. A day whose
-- day report is not loaded has no provider messages to compare: not "none".
-- The checkpoint outlives the raw rows (retention drops those after 90 days),
-- so its row count tells "an empty report" from "rows no longer kept".
with source as (

    select * from {{ source('dlr', 'report_checkpoints') }}

),

renamed as (

    select
        report_kind,
        report_date     as day,
        rows            as report_rows,
        fetched_at,
        loaded_at

    from source

)

select * from renamed
