{#-
  A model with a custom schema lands in exactly that schema: `marts`, not
  dbt's default `<target schema>_marts`. Finance, the marts_reader role and
  the report command all name `marts` literally.
-#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
