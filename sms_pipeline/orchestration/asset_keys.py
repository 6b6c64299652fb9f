"""Every Python asset's key, declared once (dbt's come from the dbt project).

The dbt sources map onto these keys by name (``dbt_project/models/staging/__sources.yml``).
"""

import dagster as dg

# ingest
DAY_REPORT = dg.AssetKey(["dlr", "day_report"])
TRANSACTION_REPORTS = dg.AssetKey(["dlr", "transaction_reports"])
INTRADAY_DELIVERY_REPORTS = dg.AssetKey(["dlr", "intraday_delivery_reports"])
DELIVERY_CODES = dg.AssetKey(["dlr", "delivery_codes"])  # the provider's error-code table (receipt pushes)
# reconcile
RECEIPTS = dg.AssetKey(["dlr", "receipts"])
RECONCILIATION = dg.AssetKey(["msg", "reconciliation"])
INTRADAY_RECONCILIATION = dg.AssetKey(["msg", "intraday_reconciliation"])
UPKEEP = dg.AssetKey(["msg", "upkeep"])
OUTBOUND_QUEUE = dg.AssetKey(["msg", "outbound_queue"])  # observed hourly: the send queue's backlog
SCHEDULE_CROSSCHECK = dg.AssetKey(["msg", "schedule_crosscheck"])  # provider-side campaigns against our rows
# marts
PROVIDER_SUMMARY = dg.AssetKey(["dlr", "provider_summary"])
COST_DAILY = dg.AssetKey(["marts", "cost_daily"])

# Each health reading (sms_pipeline.reconcile.health) on the asset it judges.
HEALTH_CHECK_TARGETS: dict[str, dg.AssetKey] = {
    "oldest_pending_age": OUTBOUND_QUEUE,
    "still_pending_ratio": OUTBOUND_QUEUE,
    "receipts_flowing": RECEIPTS,
    "orphan_rate": RECEIPTS,
    "unknown_open": RECONCILIATION,
    "ambiguous_open": RECONCILIATION,
    "unpriced_units": COST_DAILY,
}

# Who answers for an asset (the dbt models name theirs in their yml).
DATA_ENGINEERING = ["team:data-engineering"]
FINANCE = ["team:finance"]
