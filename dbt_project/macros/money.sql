{#-
  The sum of an amount over the rows matching `condition`, or NULL as soon as
  one of them has no amount (an unpriced row: its money is unknown, and a
  partial sum or a 0 would understate it). 0 when no row matches: nothing to
  pay is a known amount.
-#}
{% macro sum_of_known(amount, condition) -%}
    case when bool_and({{ amount }} is not null) filter (where {{ condition }}) is not false
         then coalesce(sum({{ amount }}) filter (where {{ condition }}), 0) end
{%- endmacro %}
