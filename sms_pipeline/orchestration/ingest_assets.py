"""Dagster assets that bring the provider's reports in (group ``ingest``).

- ``dlr/day_report`` (day partitions): the zipped day report of day D.
- ``dlr/transaction_reports`` (day partitions, after the day report):
  by-transaction reports for D's transactions that are still open.
- ``dlr/intraday_delivery_reports`` (unpartitioned, hourly): today's getDlr
  pages, so OTP outcomes are known within the hour.
- ``dlr/delivery_codes`` (unpartitioned, hourly): the provider's error-code
  table, through which receipt pushes are read.

The work is in :mod:`sms_pipeline.ingest`; these assets loop over the days
of a run, commit each day on its own, and turn the results into metadata a
person can read (never recipient numbers or message text). A range run goes
day by day: a day that fails (e.g. a corrupt zip) is reported and the other
days still load; the days that finished are recorded as materialised even
when the run fails. A report that would shrink (fewer rows than stored) is
refused and stops the run there, unless the ``report_guard`` resource allows
it (docs/design.md#report-guards).
"""

# No `from __future__ import annotations`: Dagster inspects the asset
# functions' annotations (context and resource types) at definition time.

from dataclasses import asdict
from datetime import date
from typing import Any

import dagster as dg
import psycopg

from sms_pipeline.db.report_guards import ReportShrinkRefused
from sms_pipeline.ingest.day_report import DayReportLoad, load_day_report
from sms_pipeline.ingest.delivery_codes import refresh_delivery_codes
from sms_pipeline.ingest.intraday import IntradayLoad, load_intraday_delivery_reports
from sms_pipeline.ingest.status_counts import StatusCounts
from sms_pipeline.ingest.transaction_reports import TransactionReports, fetch_transaction_reports
from sms_pipeline.orchestration.asset_keys import (
    DATA_ENGINEERING,
    DAY_REPORT,
    DELIVERY_CODES,
    INTRADAY_DELIVERY_REPORTS,
    TRANSACTION_REPORTS,
)
from sms_pipeline.orchestration.day_runs import day_by_day
from sms_pipeline.orchestration.partitions import DAY_ASSET_OPTIONS
from sms_pipeline.orchestration import table_metadata
from sms_pipeline.orchestration.resources import (
    ClockResource,
    DatabaseResource,
    PipelineResource,
    ProviderResource,
    ReportGuardResource,
)
from sms_pipeline.orchestration.schedules import DAILY_FRESHNESS, HOURLY_ASSET_OPTIONS
from sms_pipeline.provider.results import ProviderCallError

GROUP = "ingest"


@dg.asset(
    key=DAY_REPORT,
    metadata=table_metadata.named(table_metadata.DAY_REPORT_ROWS),
    **DAY_ASSET_OPTIONS,
    group_name=GROUP,
    owners=DATA_ENGINEERING,
    freshness_policy=DAILY_FRESHNESS,
    description=(
        "The provider's zipped day report of day D (every message submitted on D with its latest "
        "status), verified and loaded into dlr.day_report_rows with a checkpoint. An unchanged "
        "download writes nothing; a corrupt or truncated one fails the day and writes nothing; one "
        "with fewer rows than stored stops the run and writes nothing (unless report_guard allows it)."
    ),
)
def day_report(
    context: dg.AssetExecutionContext,
    database: DatabaseResource,
    provider: ProviderResource,
    clock: ClockResource,
    pipeline: PipelineResource,
    report_guard: ReportGuardResource,
) -> dg.MaterializeResult:
    tz = pipeline.zone
    app_clock = clock.clock()
    allow_shrink = report_guard.allow_shrink
    text_key = pipeline.text_key()
    with provider.client() as client, database.connect(autocommit=True) as conn:
        return day_by_day(
            context,
            lambda day: load_day_report(conn, client, day, tz, app_clock, text_key=text_key,
                                        allow_shrink=allow_shrink),
            lambda load: day_report_metadata(conn, load),
            skippable=(ProviderCallError,),
            stops=(ReportShrinkRefused,),  # a person must look: never skipped past
        )


@dg.asset(
    key=TRANSACTION_REPORTS,
    metadata=table_metadata.named(table_metadata.TXN_REPORT_ROWS),
    deps=[DAY_REPORT],
    **DAY_ASSET_OPTIONS,
    group_name=GROUP,
    owners=DATA_ENGINEERING,
    freshness_policy=DAILY_FRESHNESS,
    description=(
        "By-transaction reports for the transactions submitted on day D that still have rows "
        "without a final status (and none in the day report), paced and bounded; raw answers in "
        "dlr.txn_report_rows, replaced per transaction when they change (never by a smaller answer, "
        "unless report_guard allows it)."
    ),
)
def transaction_reports(
    context: dg.AssetExecutionContext,
    database: DatabaseResource,
    provider: ProviderResource,
    clock: ClockResource,
    pipeline: PipelineResource,
    report_guard: ReportGuardResource,
) -> dg.MaterializeResult:
    app_clock = clock.clock()

    def fetch(day: date) -> TransactionReports:
        result = fetch_transaction_reports(
            conn, client, day, pipeline.zone, app_clock, concurrency=pipeline.report_concurrency,
            allow_shrink=report_guard.allow_shrink,
        )
        if result.failed:
            first_id, reason = next(iter(result.failed.items()))
            raise ProviderCallError(
                f"transaction reports {day.isoformat()}: {len(result.failed)} of {result.transactions} "
                f"kept failing (first: {first_id}: {reason}); the others are stored"
            )
        return result

    with provider.client() as client, database.connect(autocommit=True) as conn:
        return day_by_day(
            context, fetch,
            lambda result: transaction_reports_metadata(
                conn, result, stored_rows=table_metadata.txn_report_rows_of_day(conn, result.day)),
            skippable=(ProviderCallError,), stops=(ReportShrinkRefused,),
        )


@dg.asset(
    key=INTRADAY_DELIVERY_REPORTS,
    metadata=table_metadata.named(table_metadata.GETDLR_ROWS),
    **HOURLY_ASSET_OPTIONS,
    group_name=GROUP,
    description=(
        "Today's receipts (provider-local day) through the paged getDlr report, replacing the "
        "previous pull in dlr.getdlr_rows, so OTP outcomes are known within the hour."
    ),
)
def intraday_delivery_reports(
    database: DatabaseResource,
    provider: ProviderResource,
    clock: ClockResource,
    pipeline: PipelineResource,
) -> dg.MaterializeResult:
    tz = pipeline.zone
    with provider.client() as client, database.connect(autocommit=True) as conn:
        result = load_intraday_delivery_reports(conn, client, tz, clock.clock(), text_key=pipeline.text_key())
        return dg.MaterializeResult(metadata=intraday_metadata(conn, result))


@dg.asset(
    key=DELIVERY_CODES,
    metadata=table_metadata.named(table_metadata.DELIVERY_CODES),
    **HOURLY_ASSET_OPTIONS,
    group_name=GROUP,
    description=(
        "The provider's error-code table (/info/deliverycodes) in dlr.delivery_codes: the report word of "
        "each code, through which receipt pushes (which carry no status word) are reconciled. An empty or "
        "malformed answer fails the step and keeps the stored table; a code no longer listed is kept."
    ),
)
def delivery_codes(database: DatabaseResource, provider: ProviderResource,
                   clock: ClockResource) -> dg.MaterializeResult:
    with provider.client() as client, database.connect(autocommit=True) as conn:
        result = refresh_delivery_codes(conn, client, clock.clock())
        stored = result.listed + result.kept_unlisted
        return dg.MaterializeResult(metadata={**table_metadata.table(conn, table_metadata.DELIVERY_CODES, stored),
                                              **asdict(result)})


def _statuses(counts: StatusCounts) -> dict[str, Any]:
    return {
        "statuses": table_metadata.counts(counts.by_word),
        "unmapped_statuses": table_metadata.counts(counts.unmapped),
        "unmapped_rows": sum(counts.unmapped.values()),
    }


def day_report_metadata(conn: psycopg.Connection, load: DayReportLoad) -> dict[str, Any]:
    return {
        # the day's rows, loaded or unchanged
        **table_metadata.table(conn, table_metadata.DAY_REPORT_ROWS, load.rows),
        "unchanged": load.skipped_same_checksum,
        "checksum": load.checksum,
        "download_bytes": load.download_bytes,
        "duplicates": load.duplicates,
        **_statuses(load.statuses),
        "unparsed_times": load.unparsed_times,
        "ignored_columns": ", ".join(load.ignored_columns) or "none",
        # Python's csv instead of the copy of the file's own bytes, and why (a shape, never a value)
        "slower_path": load.slower_path_reason or "none",
        "duration_s": round(load.duration_s, 3),
        "loaded_at": dg.MetadataValue.timestamp(load.loaded_at) if load.loaded_at else "never",
    }


def transaction_reports_metadata(conn: psycopg.Connection, result: TransactionReports, *,
                                 stored_rows: int) -> dict[str, Any]:
    return {
        **table_metadata.table(conn, table_metadata.TXN_REPORT_ROWS, stored_rows),  # the day's rows now stored
        "transactions": result.transactions,
        "replaced": result.changed,  # answers that differed from the stored one
        "identical": result.unchanged,  # answers equal to the stored one: nothing written
        "no_report_yet": result.empty,
        "answer_rows": result.rows,  # rows in the answers received this run
        **_statuses(result.statuses),
        "duration_s": round(result.duration_s, 3),
    }


def intraday_metadata(conn: psycopg.Connection, load: IntradayLoad) -> dict[str, Any]:
    return {
        "day": load.day.isoformat(),
        **table_metadata.table(conn, table_metadata.GETDLR_ROWS, load.rows),  # today's pull
        "unchanged": load.skipped_same_checksum,
        "checksum": load.checksum,
        "duplicates": load.duplicates,
        **_statuses(load.statuses),
        "duration_s": round(load.duration_s, 3),
        "loaded_at": dg.MetadataValue.timestamp(load.loaded_at) if load.loaded_at else "never",
    }
