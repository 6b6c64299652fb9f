{#- The column's database type is exactly `data_type` (e.g. money is numeric,
    never a float, however it was computed). -#}
{% test column_type_is(model, column_name, data_type) %}

select table_schema, table_name, column_name, data_type
from information_schema.columns
where table_schema = '{{ model.schema }}'
  and table_name = '{{ model.identifier }}'
  and column_name = '{{ column_name }}'
  and data_type <> '{{ data_type }}'
union all
-- a column that is not there at all fails too
select '{{ model.schema }}', '{{ model.identifier }}', '{{ column_name }}', 'missing'
where not exists (
    select from information_schema.columns
    where table_schema = '{{ model.schema }}'
      and table_name = '{{ model.identifier }}'
      and column_name = '{{ column_name }}'
)

{% endtest %}
