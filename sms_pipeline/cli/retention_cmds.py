"""``sms-pipeline retention plan | apply [--at TIME]``: what message retention drops, and dropping it by hand.

``plan`` changes nothing: every message partition with its rows and why it
would be dropped or kept, then what the hourly upkeep's retention would drop
(receipt partitions, raw report loads, resolved orphans). ``apply`` runs the
daily upkeep's message retention itself (the same function as the Dagster
asset ``msg/daily_upkeep``, which redacts old bodies too). ``--at`` asks as of another instant (a
virtual clock's, or "what goes next month").
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

import psycopg

from sms_pipeline.core.clock import RealClock
from sms_pipeline.db import connection
from sms_pipeline.errors import UserError
from sms_pipeline.reconcile import housekeeping, retention
from sms_pipeline.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("retention", help="message retention: what the upkeep drops (plan), or drop it now")
    actions = parser.add_subparsers(dest="retention_command", metavar="ACTION", required=True)
    for name, handler, help_text in (
        ("plan", plan, "show what the next upkeep would drop or purge, and why each message month is kept"),
        ("apply", apply, "drop the message months the plan says 'drop' (what the daily upkeep does)"),
    ):
        action = actions.add_parser(name, help=help_text)
        action.add_argument("--at", type=_instant, default=None, metavar="TIME",
                            help="as of this ISO instant with its offset (default: now)")
        action.set_defaults(handler=handler)


def _instant(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO instant (e.g. 2026-12-01T03:30:00+05:30): {text!r}") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give the instant's offset (e.g. +05:30 or Z): {text!r}")
    return value


def _now(args: argparse.Namespace) -> datetime:
    return args.at.astimezone(UTC) if args.at else RealClock().now()


def _connect(settings: Settings) -> psycopg.Connection:
    return connection.connect(settings, autocommit=True)


def _rows(count: int | None, estimated: bool) -> str:
    if count is None:
        return "rows unknown"
    return f"{'~' if estimated else ''}{count:,} rows"


def plan_lines(found: retention.Plan) -> list[str]:
    """The plan as a person reads it (no recipient, body or id: partition names, counts, days)."""
    at = found.now.astimezone(UTC).isoformat(timespec="seconds")
    if found.message_horizon is None:
        head = "kept for ever (SMS_PIPELINE_MESSAGE_RETENTION_DAYS=0)"
    else:
        head = (f"{found.message_retention_days} days: months ending on or before "
                f"{found.message_horizon.astimezone(UTC).isoformat(timespec='seconds')} may go")
    lines = [f"retention plan at {at}", f"message partitions ({head}):"]
    if not found.message_partitions:
        lines.append("  none")
    width = max((len(p.partition) for p in found.message_partitions), default=0)
    for p in found.message_partitions:
        verdict = "drop" if p.verdict == retention.DROP else "keep"
        lines.append(f"  {p.partition:<{width}}  {_rows(p.rows, p.rows_estimated):>14}  {verdict}  {p.reason()}")
    lines.append(f"expired OTP verifications (purged first, so their months can go): "
                 f"{found.expired_otp_verifications:,}")
    before = found.receipts_before.astimezone(UTC).isoformat(timespec="seconds")
    lines.append(f"receipt partitions ({housekeeping.RECEIPT_RETENTION.days} days: months ending on or before "
                 f"{before}): " + (", ".join(f"{name} ({_rows(count, True)})" for name, count
                                             in found.receipt_partitions) or "none"))
    lines.append(f"raw report loads (report dates before {found.raw_reports_before}): "
                 f"{found.day_report_partitions} day report partitions, {found.txn_reports} transaction reports, "
                 f"{found.getdlr_rows:,} getDlr rows")
    lines.append(f"resolved orphans (resolved before "
                 f"{found.orphans_resolved_before.astimezone(UTC).isoformat(timespec='seconds')}): "
                 f"{found.resolved_orphans:,}")
    return lines


def plan(args: argparse.Namespace, settings: Settings) -> int:
    with _connect(settings) as conn:
        try:
            found = retention.plan(conn, _now(args), message_retention_days=settings.message_retention_days,
                                   zone=settings.provider_timezone)
        except psycopg.errors.UndefinedFunction as exc:
            raise UserError("the database predates message retention; run `sms-pipeline db upgrade`") from exc
    print("\n".join(plan_lines(found)))
    return 0


def apply(args: argparse.Namespace, settings: Settings) -> int:
    with _connect(settings) as conn:
        done = retention.drop_old_messages(conn, _now(args), message_retention_days=settings.message_retention_days)
    print(f"message partitions dropped: {done.message_partitions_dropped}; "
          f"OTP verifications purged first: {done.otp_verifications_purged}")
    return 0
