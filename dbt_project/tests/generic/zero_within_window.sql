{#- Within the run's days (vars first_day..last_day), the column is zero
    wherever it is known; null means "nothing to compare" and passes. -#}
{% test zero_within_window(model, column_name, day_column='day') %}

select {{ day_column }}, {{ column_name }}
from {{ model }}
where {{ day_column }} >= {{ first_day() }}
  and {{ day_column }} <= {{ last_day() }}
  and {{ column_name }} <> 0

{% endtest %}
