{#- Counts, units and money are never below zero: one query for all the
    columns of a model. -#}
{% test non_negative(model, columns) %}

select *
from {{ model }}
where {% for column in columns %}{{ column }} < 0{% if not loop.last %} or {% endif %}{% endfor %}

{% endtest %}
