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

The terminal shows one line per step started and finished (and a step's
warnings and errors); every Dagster event, DEBUG ones included, and dbt's
output go to ``$SMS_PIPELINE_HOME/logs/runs.log`` (to the terminal too with
``--verbose``), and stay in the run's event log and compute logs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
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

    # The database first: the pipeline's modules read the first partition day when imported.
    with connection.connect(settings) as conn:
        migrate.upgrade(conn)

    from sms_pipeline.definitions import definitions_for
    from sms_pipeline.orchestration import run_guard
    from sms_pipeline.orchestration.check_results import failed_checks
    from sms_pipeline.orchestration.partitions import BACKFILL_POLICY, DAY_PARTITIONS, FIRST_DAY
    from sms_pipeline.orchestration.schedules import DAILY_SELECTION, partition_range_tags

    first, last = args.first, args.last
    newest = DAY_PARTITIONS.get_last_partition_key()
    if last < first:
        raise UserError(f"--to {last} is before --from {first}")
    if first < FIRST_DAY:
        raise UserError(f"--from {first} is before the first partition {FIRST_DAY}")
    if newest is None or last > date.fromisoformat(newest):
        raise UserError(f"--to {last} is not a closed provider day yet (newest partition: {newest})")
    try:
        selection = dg.AssetSelection.from_string(args.select) if args.select else DAILY_SELECTION
    except Exception as exc:  # Dagster raises several types for a bad selection string
        raise UserError(f"--select {args.select!r} is not a valid asset selection: {exc}") from None

    console = sys.stdout  # dbt's output is redirected while a run executes; these lines are not

    def say(line: str) -> None:
        """A line about the runs themselves (a step, a wait for a pool, a dead run cleaned up), at once."""
        print(line, file=console, flush=True)

    job_name = "sms_pipeline_cli_materialize"
    defs = dg.Definitions.merge(
        definitions_for(settings, jobs=[dg.define_asset_job(job_name, selection=selection)]),
        # Replaces the jobs' default colored console logger (every event, DEBUG ones too, on stderr).
        dg.Definitions(loggers={"progress": _progress_logger(say)}),
    )
    job = defs.resolve_job_def(job_name)
    instance = _instance(settings)
    # Runs of this command that died are failed and their pool slots freed first; each run waits
    # (visibly, boundedly) for its pools, and SIGTERM/SIGINT end it within seconds (run_guard).
    try:
        with run_guard.RunGuard(instance, run_guard.job_pools(job), wait_s=settings.pool_wait_s,
                                say=say) as guard:
            guard.reap()
            for chunk_first, chunk_last in _chunks(first, last, BACKFILL_POLICY.max_partitions_per_run or 1):
                guard.wait_for_pools()
                run_id = run_guard.new_run_id()
                tags = {**partition_range_tags(chunk_first, chunk_last), **guard.tags()}
                result = guard.watch(run_id, partial(
                    _execute, job, settings, args.verbose, instance=instance, run_id=run_id, tags=tags,
                    raise_on_error=False, run_config=_run_config(args.allow_shrink),
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


def _execute(job, settings: Settings, verbose: bool, **kwargs):
    """``job.execute_in_process(**kwargs)`` with dbt's output in the runs log, not on the terminal.

    dagster-dbt writes dbt's lines to ``sys.stdout``, which Dagster's compute
    log manager captures and copies back to that same stream: pointing it at
    the log file keeps the lines (and the run's compute logs) off the terminal.
    """
    if verbose:
        return job.execute_in_process(**kwargs)
    from sms_pipeline.logging import runs_log

    with runs_log(settings.home).open("a", encoding="utf-8") as out, redirect_stdout(out):
        return job.execute_in_process(**kwargs)


def _progress_logger(say):
    """The job's logger: every record to the runs log, a short line per step to ``say``.

    Dagster logs its events (step started, output, materialization...) at
    DEBUG; a step's failure at ERROR.
    """
    import dagster as dg

    from sms_pipeline.logging import RUNS_LOGGER

    class Progress(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logging.getLogger(RUNS_LOGGER).handle(record)
            line = progress_line(record)
            if line is not None:
                say(line)

    @dg.logger(description="sms-pipeline materialize: progress lines on the terminal, every event in logs/runs.log")
    def progress(_init_context) -> logging.Logger:
        logger = logging.Logger(RUNS_LOGGER, logging.DEBUG)  # a fresh one per run: not in logging's registry
        logger.addHandler(Progress())
        return logger

    return progress


def progress_line(record: logging.LogRecord) -> str | None:
    """The terminal's line for a record of a run's logger, or None (the runs log has it anyway).

    Dagster's loggers receive records carrying ``dagster_meta`` (the event, its step).
    """
    meta = getattr(record, "dagster_meta", None) or {}
    event = meta.get("dagster_event")
    step = meta.get("step_key") or "run"
    if event is not None:
        if event.is_step_start:
            return f"{step}: started"
        if event.is_step_success:
            return f"{step}: done in {event.event_specific_data.duration_ms / 1000:.1f} s"
        if event.is_step_failure:
            return f"{step}: failed (details: logs/runs.log)"
        return None  # the run's own failure is the command's last line
    if record.levelno >= logging.WARNING:  # a step's own warning or error (context.log)
        message = str(meta.get("orig_message") or record.getMessage()).strip()
        return f"{step}: {record.levelname} {message.splitlines()[0] if message else ''}".rstrip()
    return None


def _run_config(allow_shrink: bool) -> dict:
    """Our logger (Dagster starts only the loggers the run config names, else its console logger),
    and ``--allow-shrink`` (docs/design.md#report-guards)."""
    config: dict = {"loggers": {"progress": {}}}
    if allow_shrink:
        config["resources"] = {"report_guard": {"config": {"allow_shrink": True}}}
    return config


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


# Figures of a materialisation worth a line, and their names on it.
_SUMMARY_KEYS = {"dagster/row_count": "rows", "unchanged": "unchanged", "duplicates": "duplicates",
                 "unmapped_rows": "unmapped_rows", "transactions": "transactions", "replaced": "replaced",
                 "duration_s": "duration_s"}


def _summary(metadata) -> str:
    shown = [f"{label}={metadata[key].value}" for key, label in _SUMMARY_KEYS.items() if key in metadata]
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
