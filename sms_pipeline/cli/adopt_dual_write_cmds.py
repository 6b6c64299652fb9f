"""``sms-pipeline adopt install-trigger | remove-trigger | sync | verify | cutover``: the dual write.

The expand phase of an adoption (docs/adoption.md): a trigger in the legacy
database records each send of the old sender in an outbox there, ``sync``
moves it into ``msg.outbound_message`` (never ``pending``), ``verify``
compares both sides day by day, and ``cutover`` refuses while a step is not
done, then may enqueue the legacy rows never sent. install-trigger,
remove-trigger and sync write in the legacy database (its outbox, trigger
and function only); verify and cutover only read it. The legacy DSN is only
ever shown with its password masked.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import psycopg
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sms_pipeline.adopt import backfill, dual_write, legacy
from sms_pipeline.adopt.mapping import ColumnMap
from sms_pipeline.cli.adopt_cmds import add_legacy_options, column_map, positive_int
from sms_pipeline.cli.intake_files import database_url
from sms_pipeline.cli.signals import report_failed_pass, stop_on_signals
from sms_pipeline.core.clock import RealClock
from sms_pipeline.db import connection
from sms_pipeline.errors import UserError
from sms_pipeline.intake import messages as intake
from sms_pipeline.settings import Settings

log = logging.getLogger(__name__)


def _writable_legacy_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from-url", required=True, metavar="DSN",
                        help=f"the legacy database (written: {dual_write.OUTBOX}, its trigger and function)")
    parser.add_argument("--table", required=True, help="the legacy sends table (schema.table allowed)")
    parser.add_argument("--map", type=Path, metavar="FILE", help="TOML [columns] renaming the legacy columns")


def _adoption_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument("--class", dest="message_class", required=required,
                        choices=("transactional", "promotional"))
    parser.add_argument("--sender", required=required, help="the sender id the legacy sender used")
    parser.add_argument("--event-type", required=required, help="the business keys' event type")


def _interval(raw: str) -> float:
    value = float(raw)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {raw}")
    return value


def register_dual_write(actions: argparse._SubParsersAction) -> None:
    install = actions.add_parser("install-trigger", help="install, in the legacy database, the trigger that "
                                                         "records each send in an outbox (idempotent)")
    _writable_legacy_options(install)
    install.set_defaults(handler=install_trigger_command)

    remove = actions.add_parser("remove-trigger", help="drop the legacy dual-write trigger (the outbox stays "
                                                       "until drained)")
    _writable_legacy_options(remove)
    remove.set_defaults(handler=remove_trigger_command)

    sync = actions.add_parser("sync", help="move the outbox's recorded sends into the pipeline (never pending), "
                                           "until SIGINT/SIGTERM or with --once")
    _writable_legacy_options(sync)
    sync.add_argument("--tenant", required=True)
    _adoption_options(sync)
    sync.add_argument("--once", action="store_true", help="drain the outbox once, then exit")
    sync.add_argument("--interval-s", type=_interval, default=5.0, help="pause between passes (default 5)")
    sync.add_argument("--batch", type=positive_int, default=500, help="legacy rows per transaction (default 500)")
    sync.set_defaults(handler=sync_command)

    verify = actions.add_parser("verify", help="compare the legacy table and the adopted rows day by day "
                                               "(exit 0 only when they agree)")
    add_legacy_options(verify)
    verify.add_argument("--tenant", required=True)
    verify.add_argument("--since", type=date.fromisoformat, metavar="YYYY-MM-DD",
                        help="only days from this provider-local day on")
    verify.set_defaults(handler=verify_command)

    cutover = actions.add_parser("cutover", help="check every cutover step (refuses while one is not done); "
                                                 "--include-unsent then enqueues the legacy rows never sent")
    add_legacy_options(cutover)
    cutover.add_argument("--tenant", required=True)
    cutover.add_argument("--quiet-minutes", type=float, default=10.0,
                         help="no legacy send recorded for this long (default 10)")
    cutover.add_argument("--include-unsent", action="store_true",
                         help="enqueue the legacy rows never sent as pending (needs --class, --sender, "
                              "--event-type)")
    _adoption_options(cutover, required=False)
    cutover.set_defaults(handler=cutover_command)


def _legacy_error(columns: ColumnMap, exc: psycopg.Error) -> UserError:
    """A legacy database refusal as one line (a missing column of the map, a missing privilege)."""
    log.debug("legacy database error", exc_info=True)
    detail = exc.diag.message_primary or type(exc).__name__
    return UserError(f"legacy table {columns.table}: {detail} (see --map)")


def install_trigger_command(args: argparse.Namespace, settings: Settings) -> int:
    columns = column_map(args)
    with legacy.connect(args.from_url, read_only=False) as conn:
        try:
            dual_write.install_trigger(conn, columns)
        except psycopg.errors.DatabaseError as exc:
            raise _legacy_error(columns, exc) from None
    print(f"dual-write trigger installed on {columns.table} at {connection.redact(args.from_url)}: each "
          f"recorded send now lands in {dual_write.OUTBOX}; run `sms-pipeline adopt sync` to move them")
    return 0


def remove_trigger_command(args: argparse.Namespace, settings: Settings) -> int:
    columns = column_map(args)
    with legacy.connect(args.from_url, read_only=False) as conn:
        was_there = dual_write.remove_trigger(conn, columns)
        waiting = dual_write.outbox_waiting(conn, columns)
    print(f"dual-write trigger {'removed from' if was_there else 'was not installed on'} {columns.table}; "
          f"{waiting} recorded sends wait in {dual_write.OUTBOX}"
          + (" (drain them with `sms-pipeline adopt sync --once`)" if waiting else ""))
    return 0


def _sync_options(args: argparse.Namespace, settings: Settings, table: str) -> backfill.AdoptOptions:
    """The adoption's options; ``table``: the legacy table's canonical name (the markers' and event ids')."""
    return backfill.AdoptOptions.from_settings(settings, tenant=args.tenant, message_class=args.message_class,
                                               sender=args.sender, event_type=args.event_type,
                                               legacy_table=table)


def _sync_line(totals: dual_write.SyncTotals) -> str:
    a, later = totals.adopted, totals.later
    return (f"synced {totals.legacy_rows} legacy rows: submitted={a.submitted} rejected={a.rejected} "
            f"unknown={a.unknown} superseded={a.superseded} already adopted={a.already_adopted} "
            f"skipped (never sent)={a.skipped_unsent} bad numbers={a.bad_number + a.bad_row} "
            f"upgraded (unknown -> submitted)={later.upgraded} sent again (not adopted)={len(later.sent_again)}")


def _report_later(later: dual_write.LaterSends) -> None:
    """The later entries a person must look at, one line each (legacy ids only: never a number or an id)."""
    for legacy_id in later.sent_again:
        print(f"sms-pipeline: adopt sync: legacy id {legacy_id} was sent again: transaction <not printed> not "
              "adopted (verify shows it until a person settles it)", file=sys.stderr, flush=True)
    if later.left_unknown:
        print(f"sms-pipeline: adopt sync: {later.left_unknown} unknown recipients were later rejected by the "
              "provider's answer: left unknown (unknown -> rejected is not a legal move; the day report "
              "settles them)", file=sys.stderr, flush=True)
    if later.unpriced:
        print(f"sms-pipeline: adopt sync: {later.unpriced} upgraded rows have no rate-card price (cost NULL)",
              file=sys.stderr, flush=True)


def _warn_backlog(command: str, waiting: int) -> None:
    warning = dual_write.falling_behind(waiting)
    if warning is not None:
        log.warning("adopt %s: %s", command, warning)
        print(f"sms-pipeline: adopt {command}: {warning}", file=sys.stderr, flush=True)


def _sync_pass(url: str, args: argparse.Namespace, settings: Settings, columns: ColumnMap,
               stop: threading.Event) -> dual_write.SyncTotals:
    """One drain of the outbox, on connections of its own, with a progress bar over what waits."""
    with (legacy.connect(args.from_url, read_only=False) as legacy_conn,
          connection.connect_url(url, autocommit=True) as conn):
        options = _sync_options(args, settings, legacy.canonical_table(legacy_conn, args.table))
        progress = Progress(TextColumn("sync"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            transient=True, disable=not sys.stderr.isatty())
        waiting = dual_write.outbox_waiting(legacy_conn, columns)
        _warn_backlog("sync", waiting)
        with progress:
            task = progress.add_task("sync", total=waiting)
            return dual_write.sync(conn, legacy_conn, columns, options, clock=RealClock(), batch=args.batch,
                                   stopped=stop.is_set, on_batch=lambda n: progress.advance(task, n))


def sync_command(args: argparse.Namespace, settings: Settings) -> int:
    columns = column_map(args)
    url = database_url(settings)
    stop = threading.Event()
    last_error = None
    with stop_on_signals(stop.set, "stopping after this batch"):
        while not stop.is_set():
            try:
                totals = _sync_pass(url, args, settings, columns, stop)
                last_error = None
            except Exception as exc:  # the loop outlives a bad pass: each batch committed or rolled back whole
                if args.once or isinstance(exc, dual_write.LegacyTableMissing):
                    raise  # nothing a later pass would find otherwise
                last_error = report_failed_pass("adopt sync", exc, last_error, log,
                                                (UserError, psycopg.OperationalError))
                totals = None
            if totals is not None and (totals.legacy_rows or args.once):
                line = _sync_line(totals)
                log.info("adopt sync: %s", line)
                print(f"{datetime.now(UTC).isoformat(timespec='seconds')} {line}", flush=True)
                _report_later(totals.later)
            if args.once or stop.wait(args.interval_s):
                break
    return 0


def _figures(f: dual_write.Figures) -> str:
    return f"{f.messages:>8} {f.recipients:>10} {f.units:>8}"


def verify_command(args: argparse.Namespace, settings: Settings) -> int:
    columns = column_map(args)
    url = database_url(settings)
    with legacy.connect(args.from_url) as legacy_conn, connection.connect_url(url, autocommit=True) as conn:
        days = dual_write.compare(conn, legacy_conn, args.tenant, columns, settings.provider_timezone,
                                  since=args.since)
    figures = f"{'messages':>8} {'recipients':>10} {'units':>8}"
    print(f"{'':<10} | {'legacy (sent)':^28} | {'adopted':^28} |")
    print(f"{'day':<10} | {figures} | {figures} | refused")
    for c in days:
        mark = "" if c.same else "  DIFFERS"
        print(f"{c.day.isoformat():<10} | {_figures(c.legacy)} | {_figures(c.adopted)} | {c.refused:>7}{mark}")
    for c in days:
        for legacy_id in c.not_adopted:
            print(f"sms-pipeline: adopt verify: legacy id {legacy_id}: its transaction <not printed> is not "
                  "adopted (sent again, or answered after its adoption: `adopt sync` upgrades an unknown row)",
                  file=sys.stderr)
    differing = [c for c in days if not c.same]
    if differing:
        print(f"{len(differing)} of {len(days)} days differ (first {differing[0].day.isoformat()}): run "
              "`sms-pipeline adopt sync --once`, or the backfill for days before the trigger", file=sys.stderr)
        return 1
    print(f"no difference over {len(days)} days"
          + ("; refused recipients (bad numbers or bodies) are listed by `adopt backfill`"
             if any(c.refused for c in days) else ""))
    return 0


def cutover_command(args: argparse.Namespace, settings: Settings) -> int:
    columns = column_map(args)
    if args.include_unsent and not (args.message_class and args.sender and args.event_type):
        raise UserError("--include-unsent needs --class, --sender and --event-type (the pending rows' own)")
    url = database_url(settings)
    with legacy.connect(args.from_url) as legacy_conn, connection.connect_url(url, autocommit=True) as conn:
        steps = dual_write.cutover_steps(conn, legacy_conn, args.tenant, columns, settings.provider_timezone,
                                         now=datetime.now(UTC), quiet=timedelta(minutes=args.quiet_minutes))
        _warn_backlog("cutover", dual_write.outbox_waiting(legacy_conn, columns))
        failed = [step for step in steps if not step.met]
        for step in failed:
            print(f"sms-pipeline: adopt cutover: {step.name}: {step.detail}", file=sys.stderr)
        if failed:
            print(f"cutover refused: {len(failed)} of {len(steps)} steps not done", file=sys.stderr)
            return 1
        print("cutover: " + ", ".join(f"{step.name} ok" for step in steps))
        if args.include_unsent:
            unsent = dual_write.enqueue_unsent(
                conn, legacy_conn, columns, _sync_options(args, settings, legacy.canonical_table(
                    legacy_conn, args.table)), clock=RealClock(),
                policy=intake.IntakePolicy.from_settings(settings), otp_code_length=settings.otp_code_length,
                max_body_segments=settings.max_body_segments)
            print(f"legacy rows never sent: {unsent.created} recipients enqueued as pending, "
                  f"{unsent.existing} already there")
            for reason, n in sorted(unsent.refused.items()):
                print(f"not enqueued: {n} x {reason}", file=sys.stderr)
    return 0
