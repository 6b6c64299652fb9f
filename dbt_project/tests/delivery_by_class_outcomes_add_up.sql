-- Every submitted message has exactly one outcome: the four outcome counts
-- add up to submitted, in every row.
select *
from {{ ref('delivery_by_class_daily') }}
where delivered + failed + expired + still_pending <> submitted
