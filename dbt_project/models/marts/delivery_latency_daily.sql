-- Submit-to-delivery latency of delivered messages per provider-local day of
-- the send attempt, channel and message class. Percentiles are nearest-rank
-- (percentile_disc): each is a latency some message really had, exact in
-- NUMERIC, never an interpolated float.
with delivered as (

    select * from {{ ref('int_messages__final_state') }}
    where {{ in_window('attempt_at') }}
      and message_created_at < {{ window_end() }}
      and latency_seconds is not null

)

select
    day,
    channel,
    message_class,
    count(*)                                                            as delivered,
    percentile_disc(0.50) within group (order by latency_seconds)       as p50_seconds,
    percentile_disc(0.90) within group (order by latency_seconds)       as p90_seconds,
    percentile_disc(0.99) within group (order by latency_seconds)       as p99_seconds,
    max(latency_seconds)                                                as max_seconds

from delivered
group by day, channel, message_class
