"""Getting the provider's reports into Postgres: plain functions, no Dagster.

- :func:`day_report.load_day_report`: the zipped day report of one day.
- :func:`transaction_reports.fetch_transaction_reports`: by-transaction
  reports for the still-open transactions of one day.
- :func:`intraday.load_intraday_delivery_reports`: today's getDlr pages.

The Dagster assets (``pipeline/ingest_assets.py``), the CLI and the benchmarks
call these.
"""
