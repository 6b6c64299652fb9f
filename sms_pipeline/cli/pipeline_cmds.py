"""``sms-pipeline materialize --from D --to D [--select ...]``.

Materialises day partitions in this process through the project's one
``Definitions`` object (same assets, resources and partitions as the
webserver and the schedules), in runs of at most the backfill policy's
size, recorded in the Dagster instance: ``$DAGSTER_HOME`` when set, else the
project's Postgres-backed instance (rendered by ``prepare_dagster_home``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from datetime import date, timedelta

from sms_pipeline.errors import UserError
from sms_pipeline.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "materialize",
        help="materialise day partitions (ingest, reconciliation, marts) in this process",
        description="Materialise the day partitions FROM..TO (provider-local days, both included).",
    )
    parser.add_argument("--from", dest="first", required=True, type=_day, metavar="YYYY-MM-DD")
    parser.add_argument("--to", dest="last", required=True, type=_day, metavar="YYYY-MM-DD")
    parser.add_argument(
        "--select",
        metavar="SELECTION",
        help='Dagster asset selection, e.g. \'key:"dlr/day_report"\' or "group:ingest" '
        "(default: the daily job's assets)",
    )
    parser.set_defaults(handler=materialize)


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def materialize(args: argparse.Namespace, settings: Settings) -> int:
    # Dagster is imported here, not at module level: other commands stay fast.
    import dagster as dg

    from sms_pipeline.db import connection, migrate
    from sms_pipeline.definitions import build_definitions
    from sms_pipeline.orchestration.partitions import BACKFILL_POLICY, day_partitions
    from sms_pipeline.orchestration.schedules import DAILY_SELECTION, partition_range_tags

    first, last = args.first, args.last
    partitions = day_partitions(settings)
    newest = partitions.get_last_partition_key()
    if last < first:
        raise UserError(f"--to {last} is before --from {first}")
    if first < settings.partition_start:
        raise UserError(f"--from {first} is before the first partition {settings.partition_start}")
    if newest is None or last > date.fromisoformat(newest):
        raise UserError(f"--to {last} is not a closed provider day yet (newest partition: {newest})")
    try:
        selection = dg.AssetSelection.from_string(args.select) if args.select else DAILY_SELECTION
    except Exception as exc:  # Dagster raises several types for a bad selection string
        raise UserError(f"--select {args.select!r} is not a valid asset selection: {exc}") from None

    with connection.connect(settings) as conn:
        migrate.upgrade(conn)
    job_name = "sms_pipeline_cli_materialize"
    defs = dg.Definitions.merge(
        build_definitions(settings),
        dg.Definitions(jobs=[dg.define_asset_job(job_name, selection=selection)]),
    )
    job = defs.resolve_job_def(job_name)
    instance = _instance(settings)
    for chunk_first, chunk_last in _chunks(first, last, BACKFILL_POLICY.max_partitions_per_run or 1):
        result = job.execute_in_process(
            instance=instance, tags=partition_range_tags(chunk_first, chunk_last), raise_on_error=False
        )
        for event in result.get_asset_materialization_events():
            materialization = event.event_specific_data.materialization
            print(f"{materialization.asset_key.to_user_string()} {materialization.partition or '-'}: "
                  f"{_summary(materialization.metadata)}")
        if not result.success:
            raise UserError(f"run {result.run_id} ({chunk_first}..{chunk_last}) failed: {_failure(result)}")
        print(f"run {result.run_id}: {chunk_first}..{chunk_last} done")
    return 0


def _chunks(first: date, last: date, size: int) -> Iterator[tuple[date, date]]:
    start = first
    while start <= last:
        end = min(last, start + timedelta(days=size - 1))
        yield start, end
        start = end + timedelta(days=1)


def _instance(settings: Settings):
    import dagster as dg

    from sms_pipeline.orchestration.instance import prepare_dagster_home

    if not os.environ.get("DAGSTER_HOME"):
        os.environ["DAGSTER_HOME"] = str(prepare_dagster_home(settings))
    return dg.DagsterInstance.get()


_SUMMARY_KEYS = ("rows", "unchanged", "duplicates", "unmapped_rows", "transactions", "replaced", "duration_s")


def _summary(metadata) -> str:
    shown = [f"{key}={metadata[key].value}" for key in _SUMMARY_KEYS if key in metadata]
    return ", ".join(shown) or "done"


def _failure(result) -> str:
    """The first failed step's own words (a ``Failure``'s description, else the error's first line)."""
    for event in result.all_events:
        data = event.step_failure_data if event.is_step_failure else None
        if data is None:
            continue
        if data.user_failure_data is not None and data.user_failure_data.description:
            return data.user_failure_data.description
        error = data.error.cause if data.error is not None and data.error.cause is not None else data.error
        if error is not None:
            return error.message.strip().splitlines()[0]
    return "see the run's logs"
