"""The dbt marts, from the Python side (no Dagster here).

``project``: where the dbt project is and how its manifest gets made;
``dbt_env``: the DBT_SMS_* connection variables its profile reads;
``provider_summary``: the provider's day summary, fetched and stored for the tie-out;
``cost_report``: reading marts.cost_daily for finance.
"""
