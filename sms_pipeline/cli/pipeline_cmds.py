"""``sms-pipeline materialize --from D --to D [--select ...]``.

Materialises day partitions in this process through the project's one
``Definitions`` object (same assets, resources and partitions as the
webserver and the schedules), in runs of at most the backfill policy's
size, recorded in the Dagster instance: ``$DAGSTER_HOME`` when set, else the
project's Postgres-backed instance (rendered by ``prepare_dagster_home``).

Exit status: 0 when every run succeeded and no asset check of ERROR severity
failed; 2, with one line naming the run, when a run failed or an ERROR check
did (every failed check, WARN ones too, is listed first, one line each);
128+N when stopped by signal N (SIGTERM, SIGINT), the run marked canceled and
its pool slots freed. Runs of an earlier ``materialize`` on this host whose
process is gone are marked failed and their slots freed before anything
runs; a pool held by a live run is waited for, saying which, at most
``SMS_PIPELINE_POOL_WAIT_S`` (``orchestration/run_guard.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from datetime import date, timedelta
from functools import partial

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
    parser.add_argument(
        "--allow-shrink",
        action="store_true",
        help="let a report replace a stored one with fewer rows or units (refused otherwise: a day report "
        "only grows); only once a person has checked why it shrank",
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
    from sms_pipeline.orchestration import run_guard
    from sms_pipeline.orchestration.check_results import failed_checks
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
    # Runs of this command that died are failed and their pool slots freed first; each run waits
    # (visibly, boundedly) for its pools, and SIGTERM/SIGINT end it within seconds (run_guard).
    try:
        with run_guard.RunGuard(instance, run_guard.job_pools(job), wait_s=settings.pool_wait_s,
                                say=_say) as guard:
            guard.reap()
            for chunk_first, chunk_last in _chunks(first, last, BACKFILL_POLICY.max_partitions_per_run or 1):
                guard.wait_for_pools()
                run_id = run_guard.new_run_id()
                tags = {**partition_range_tags(chunk_first, chunk_last), **guard.tags()}
                result = guard.watch(run_id, partial(
                    job.execute_in_process, instance=instance, run_id=run_id, tags=tags, raise_on_error=False,
                    run_config=_report_guard_config(args.allow_shrink),
                ))
                for event in result.get_asset_materialization_events():
                    materialization = event.event_specific_data.materialization
                    print(f"{materialization.asset_key.to_user_string()} {materialization.partition or '-'}: "
                          f"{_summary(materialization.metadata)}")
                checks = failed_checks(result.get_asset_check_evaluations())
                for check in checks:
                    print(check.line())
                errors = [check for check in checks if check.is_error]
                if not result.success:
                    also = f" ({len(errors)} ERROR check(s) failed too)" if errors else ""
                    raise UserError(f"run {result.run_id} ({chunk_first}..{chunk_last}) failed: "
                                    f"{_failure(result)}{also}")
                if errors:
                    raise UserError(f"run {result.run_id} ({chunk_first}..{chunk_last}): {len(errors)} ERROR "
                                    f"check(s) failed: {', '.join(f'{c.asset} {c.name}' for c in errors)}")
                print(f"run {result.run_id}: {chunk_first}..{chunk_last} done")
    except run_guard.Stopped as stop:
        detail = f": {stop.detail}" if stop.detail else ""
        print(f"sms-pipeline: error: stopped by {stop.name}{detail}", file=sys.stderr, flush=True)
        return 128 + stop.signum
    return 0


def _say(line: str) -> None:
    """A line about the runs themselves (a wait for a pool, a dead run cleaned up), at once."""
    print(line, flush=True)


def _report_guard_config(allow_shrink: bool) -> dict:
    """The run config of ``--allow-shrink`` (docs/design.md#report-guards); none without it."""
    return {"resources": {"report_guard": {"config": {"allow_shrink": True}}}} if allow_shrink else {}


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
