{#- An event never precedes the one it follows (e.g. resolved after received). -#}
{% test not_before(model, column_name, earlier_column) %}

select {{ earlier_column }}, {{ column_name }}
from {{ model }}
where {{ column_name }} < {{ earlier_column }}

{% endtest %}
