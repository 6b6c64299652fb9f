{#- Within the run's days (vars first_day..last_day), the column holds one of
    `values`; a row outside them fails. -#}
{% test in_values_within_window(model, column_name, values, day_column='day') %}

select {{ day_column }}, {{ column_name }}
from {{ model }}
where {{ day_column }} >= {{ first_day() }}
  and {{ day_column }} <= {{ last_day() }}
  and {{ column_name }} not in ({% for value in values %}{{ dbt.string_literal(value) }}{% if not loop.last %}, {% endif %}{% endfor %})

{% endtest %}
