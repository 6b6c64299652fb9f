"""Reconciliation: receipts, three-valued correlation, forward-only state
moves, orphans, proof of non-submission, upkeep and health.

Plain Python and SQL (``sql/queries/reconcile_*.sql``), no Dagster: the
assets in ``sms_pipeline.orchestration.reconcile_assets``, the benchmarks and the
tests call the same functions. Every statement is set-based; no Python loop
runs over a day's rows.
"""
