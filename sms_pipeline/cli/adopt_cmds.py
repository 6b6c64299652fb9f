"""``sms-pipeline adopt inspect | backfill`` (sms_pipeline.adopt; docs/adoption.md).

The legacy database is only read, in a read-only session; its DSN is shown
with the password masked. The dual write's sub-commands (install-trigger,
sync, verify, cutover) come from :mod:`sms_pipeline.cli.adopt_dual_write_cmds`.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from datetime import UTC, date, datetime
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sms_pipeline.adopt import backfill as adoption, legacy
from sms_pipeline.adopt.inspect import inspect_table
from sms_pipeline.adopt.mapping import ColumnMap, load_column_map
from sms_pipeline.cli.intake_files import database_url, readable
from sms_pipeline.core.provider_time import local_date
from sms_pipeline.db import connection
from sms_pipeline.reconcile.housekeeping import RECEIPT_RETENTION
from sms_pipeline.settings import Settings

# How far back the provider serves day reports is not published; the simulator's horizon, and our
# receipt retention, is 90 days (docs/provider-contract.md#day-report): older days cannot be verified.
REPORT_HORIZON = RECEIPT_RETENTION


def positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {raw}")
    return value


def _non_negative(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {raw}")
    return value


def add_legacy_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from-url", required=True, metavar="DSN", help="the legacy database (only read)")
    parser.add_argument("--table", required=True, help="the legacy sends table (schema.table allowed)")
    parser.add_argument("--map", type=Path, metavar="FILE",
                        help="TOML [columns] renaming id, phone, message, sent, response, created_at; event: the "
                             "business-event column")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("adopt", help="bring an existing sends table into the pipeline: inspect, backfill, "
                                          "dual write, verify, cutover")
    actions = parser.add_subparsers(dest="adopt_command", metavar="ACTION", required=True)

    inspect = actions.add_parser("inspect", help="how the legacy table maps and what a backfill would make of it "
                                                 "(read only)")
    add_legacy_options(inspect)
    inspect.add_argument("--tenant", required=True, help="the tenant the rows would belong to (its backfill "
                                                        "checkpoint is shown)")
    inspect.set_defaults(handler=inspect_command)

    backfill = actions.add_parser("backfill", help="adopt the legacy rows: one outbound row per recipient, never "
                                                   "pending (idempotent, resumable)")
    add_legacy_options(backfill)
    backfill.add_argument("--tenant", required=True)
    backfill.add_argument("--class", dest="message_class", required=True, choices=("transactional", "promotional"))
    backfill.add_argument("--sender", required=True, help="the sender id the legacy sender used")
    backfill.add_argument("--event-type", required=True, help="the business keys' event type")
    backfill.add_argument("--since", type=date.fromisoformat, metavar="YYYY-MM-DD",
                          help="only rows created on or after this provider-local day")
    backfill.add_argument("--batch", type=positive_int, default=adoption.DEFAULT_BATCH,
                          help=f"legacy rows per transaction (default {adoption.DEFAULT_BATCH})")
    backfill.add_argument("--pause-ms", type=_non_negative, default=adoption.DEFAULT_PAUSE_MS,
                          help=f"pause between batches (default {adoption.DEFAULT_PAUSE_MS})")
    backfill.add_argument("--dry-run", action="store_true",
                          help="write nothing but the empty month partitions the rows need; report the same")
    backfill.set_defaults(handler=backfill_command)

    from sms_pipeline.cli.adopt_dual_write_cmds import register_dual_write

    register_dual_write(actions)


def column_map(args: argparse.Namespace) -> ColumnMap:
    return load_column_map(args.table, None if args.map is None else readable(args.map))


def _print_mapping(columns: ColumnMap, dsn: str) -> None:
    print(f"legacy table {columns.table} at {connection.redact(dsn)}")
    for ours, theirs in columns.columns().items():
        print(f"  {ours:<11} <- {theirs}")
    if columns.event is None:
        print("  event       <- (none: business keys from the legacy id; no duplicate detection)")


def inspect_command(args: argparse.Namespace, settings: Settings) -> int:
    columns = column_map(args)
    with legacy.connect(args.from_url) as conn:
        columns = dataclasses.replace(columns, table=legacy.canonical_table(conn, columns.table))
        found = inspect_table(conn, columns)
    with connection.connect_url(database_url(settings), autocommit=True) as conn:
        stored = adoption.checkpoint(conn, args.tenant, columns.table)
    _print_mapping(columns, args.from_url)
    if stored is not None:
        since, last_id = stored
        print(f"unfinished backfill for tenant {args.tenant}: up to legacy id {last_id} "
              f"(rows since {since or 'the start'})")
    print(f"rows: {found.legacy_rows}, never sent: {found.unsent_rows}, comma lists: {found.comma_lists}")
    if found.sent_flag_false_rows:
        print(f"sent flag false but an id stored (adopted as sent): {found.sent_flag_false_rows}")
    if found.undated_rows:
        print(f"sent rows without created_at (refused): {found.undated_rows}")
    print("recipients a backfill would write, by state: "
          + ", ".join(f"{name}={found.recipients[name]}" for name in ("submitted", "rejected", "unknown"))
          + f"; refused (not a mobile, or a body that cannot be stored): {found.recipients['refused']}")
    if found.problems:
        print("sent rows without a usable transaction id (they become unknown):")
        for problem, n in sorted(found.problems.items()):
            print(f"  {problem:<14} {n:>8}  e.g. legacy id {found.examples[problem]}")
    print(f"mangled-looking ids (exponent, wrong length, float-rounded): {found.mangled}")
    if columns.event is not None:
        print(f"duplicate business events: {found.duplicate_events} events, {found.duplicate_recipients} more "
              "recipients of them (superseded when billed and later than the first)")
    return 0


def _report(total: adoption.AdoptCounts, *, dry_run: bool, horizon_day: date) -> None:
    verb = "would write" if dry_run else "wrote"
    print(f"legacy rows read: {total.legacy_rows} (never sent, skipped: {total.skipped_unsent})")
    if total.sent_flag_false_rows:
        print(f"sent flag false but an id stored (adopted as sent): {total.sent_flag_false_rows}")
    print(f"{verb}: submitted={total.submitted} rejected={total.rejected} unknown={total.unknown} "
          f"superseded={total.superseded}; already adopted: {total.already_adopted}")
    if total.unpriced:
        print(f"billed rows without a rate-card price (cost NULL): {total.unpriced}")
    if total.bad_ids:
        shown = ", ".join(str(legacy_id) for legacy_id, _ in total.bad_ids[:10])
        more = f" and {len(total.bad_ids) - 10} more" if len(total.bad_ids) > 10 else ""
        print(f"refused: bad numbers={total.bad_number} other={total.bad_row} rows without created_at="
              f"{total.undated_rows} (legacy ids {shown}{more})", file=sys.stderr)
    old = sorted(day for day in total.days if day < horizon_day)
    if old:
        print(f"{len(old)} days ({old[0]} to {old[-1]}) are older than the provider's report horizon "
              f"({REPORT_HORIZON.days} days): their rows cannot be verified and stay as adopted")
    if total.days:
        days = sorted(total.days)
        print(f"next: ingest and reconcile the days {days[0]} to {days[-1]} "
              f"(sms-pipeline materialize --from {days[0]} --to {days[-1]})")


def backfill_command(args: argparse.Namespace, settings: Settings) -> int:
    columns = column_map(args)
    url = database_url(settings)
    with legacy.connect(args.from_url) as legacy_conn, connection.connect_url(url, autocommit=True) as conn:
        columns = dataclasses.replace(columns, table=legacy.canonical_table(legacy_conn, columns.table))
        options = adoption.AdoptOptions.from_settings(
            settings, tenant=args.tenant, message_class=args.message_class, sender=args.sender,
            event_type=args.event_type, legacy_table=columns.table)
        ahead = legacy.count(legacy_conn, columns, after_id=adoption.resume_after(conn, options, args.since),
                             since=adoption.since_start(options, args.since))
        progress = Progress(TextColumn("adopt"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            transient=True, disable=not sys.stderr.isatty())
        with progress:
            task = progress.add_task("adopt", total=ahead)
            total = adoption.backfill(legacy_conn, conn, columns, options, since=args.since, batch=args.batch,
                                      pause_s=args.pause_ms / 1000, dry_run=args.dry_run,
                                      on_batch=lambda counts: progress.advance(task, counts.legacy_rows))
    now = datetime.now(UTC)
    _report(total, dry_run=args.dry_run, horizon_day=local_date(now - REPORT_HORIZON, settings.provider_timezone))
    return 0
