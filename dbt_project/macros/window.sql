{#-
  The run's window, handed over by sms_pipeline.orchestration.windows.dbt_vars (a pure
  function of the partition range, the lookback and the provider zone):
  window_start / window_end are time-zone-aware ISO instants of a half-open
  range, first_day / last_day the provider-local days it covers.
-#}

{% macro window_start() -%}
    {{ dbt.string_literal(var('window_start')) }}::timestamptz
{%- endmacro %}

{% macro window_end() -%}
    {{ dbt.string_literal(var('window_end')) }}::timestamptz
{%- endmacro %}

{% macro first_day() -%}
    {{ dbt.string_literal(var('first_day')) }}::date
{%- endmacro %}

{% macro last_day() -%}
    {{ dbt.string_literal(var('last_day')) }}::date
{%- endmacro %}

{#- Half-open: `>= start and < end`, never `between` (a boundary instant belongs to one day only). -#}
{% macro in_window(column) -%}
    ({{ column }} >= {{ window_start() }} and {{ column }} < {{ window_end() }})
{%- endmacro %}

{#- The provider-local date of an instant: never a cast in the session's zone. -#}
{% macro local_day(column) -%}
    ({{ column }} at time zone {{ dbt.string_literal(var('provider_timezone')) }})::date
{%- endmacro %}

{#-
  Pre-hook of every incremental mart: empty the window's days first.
  delete+insert on `day` only deletes days the new batch has rows for, so a
  day whose last row moved away (a message claimed a day after it was
  created) would keep stale rows. Inside the model's transaction, so readers
  see the old days or the new ones, never none.
-#}
{% macro delete_window_days() -%}
    {%- if is_incremental() -%}
        delete from {{ this }} where day >= {{ first_day() }} and day <= {{ last_day() }}
    {%- endif -%}
{%- endmacro %}
