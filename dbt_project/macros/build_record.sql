{#-
  Post-hook of every incremental mart: record each day of the window as built
  (msg.mart_build_days), inside the model's transaction, so the record exists
  exactly when the rows do. Message retention drops a month only once every
  mart has such a record for the day of each of its rows, newer than the row's
  last change (docs/design.md#retention). built_at is the application's clock
  (the var the Dagster asset passes; the database's clock when none is given),
  the clock that stamps a message's updated_at.
-#}
{% macro record_built_days() -%}
    {%- set zone = dbt.string_literal(var('provider_timezone')) -%}
    {%- set built_at = var('built_at', none) -%}
    insert into msg.mart_build_days (mart, day, starts_at, ends_at, built_at)
    select {{ dbt.string_literal(this.identifier) }}, day,
           day::timestamp at time zone {{ zone }}, (day + 1)::timestamp at time zone {{ zone }},
           {{ dbt.string_literal(built_at) ~ '::timestamptz' if built_at else 'now()' }}
      from generate_series({{ first_day() }}, {{ last_day() }}, interval '1 day') as days (day_at),
           lateral (select day_at::date as day) as d
    on conflict (mart, day) do update
       set starts_at = excluded.starts_at, ends_at = excluded.ends_at, built_at = excluded.built_at
{%- endmacro %}
