{#- The columns' database type is exactly `data_type` (money is numeric,
    never a float, however it was computed); a missing column fails too. -#}
{% test column_type_is(model, columns, data_type) %}

with expected as (
    select unnest(array[{% for column in columns %}'{{ column }}'{% if not loop.last %}, {% endif %}{% endfor %}]) as column_name
),
actual as (
    select column_name, data_type
    from information_schema.columns
    where table_schema = '{{ model.schema }}'
      and table_name = '{{ model.identifier }}'
)
select expected.column_name, coalesce(actual.data_type, 'missing') as data_type
from expected
left join actual using (column_name)
where actual.data_type is distinct from '{{ data_type }}'

{% endtest %}
