{#- The grain: no two rows share these columns. Nulls count as equal (GROUP BY
    semantics), so a null sender id cannot hide a duplicate. -#}
{% test unique_combination_of_columns(model, combination_of_columns) %}

select {{ combination_of_columns | join(', ') }}, count(*) as rows_in_group
from {{ model }}
group by {{ combination_of_columns | join(', ') }}
having count(*) > 1

{% endtest %}
