{#- Every day of the run's window (vars first_day..last_day) has exactly one
    row: an empty day is a row of zeros, not a gap. -#}
{% test one_row_per_window_day(model, column_name) %}

with days as (
    select generate_series({{ first_day() }}, {{ last_day() }}, interval '1 day')::date as day
),
rows_per_day as (
    select {{ column_name }} as day, count(*) as n
    from {{ model }}
    where {{ column_name }} >= {{ first_day() }} and {{ column_name }} <= {{ last_day() }}
    group by 1
)
select days.day, coalesce(rows_per_day.n, 0) as n
from days
left join rows_per_day using (day)
where coalesce(rows_per_day.n, 0) <> 1

{% endtest %}
