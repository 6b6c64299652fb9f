"""``sms-pipeline reconcile recent [--every 10s]``: receipt pushes reconciled within a minute.

Each pass reconciles the pushes waiting in the inbox
(:func:`sms_pipeline.reconcile.pushes.reconcile_pushes`) and prints one line
of counts when it reconciled something (never a number or an id). Once, or
with ``--every`` in a loop until SIGINT/SIGTERM: the pass in progress
finishes (its transaction commits or rolls back whole), then exit 0.

While the cached code table (``dlr.delivery_codes``) is empty (a fresh
deployment, before the hourly job's first refresh) each pass first fetches
it from the provider; while that fails the pushes wait in the inbox rather
than being read as unmapped codes. In the loop, a pass that cannot reach the
database or the provider prints one line and the next pass tries again.
"""

from __future__ import annotations

import argparse
import logging
import re
import threading
from datetime import UTC, datetime

import psycopg

from sms_pipeline.core.clock import RealClock
from sms_pipeline.db import connection, migrate
from sms_pipeline.errors import UserError
from sms_pipeline.ingest.delivery_codes import refresh_delivery_codes, stored_code_count
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.reconcile.pushes import PushPass, reconcile_pushes
from sms_pipeline.cli.signals import report_failed_pass, stop_on_signals
from sms_pipeline.settings import Settings

log = logging.getLogger(__name__)

_INTERVAL = re.compile(r"(\d+(?:\.\d*)?)(s|m)?")


def register(sub: argparse._SubParsersAction) -> None:
    reconcile = sub.add_parser("reconcile", help="reconciliation outside the Dagster jobs")
    actions = reconcile.add_subparsers(dest="reconcile_command", metavar="ACTION", required=True)
    recent = actions.add_parser("recent", help="reconcile the receipt pushes waiting in the inbox")
    recent.add_argument("--every", type=interval, metavar="INTERVAL", default=None,
                        help="repeat every INTERVAL (10s, 1m, or plain seconds) until SIGINT/SIGTERM; "
                             "default: one pass")
    recent.set_defaults(handler=reconcile_recent)


def interval(raw: str) -> float:
    """``10s``, ``1m`` or plain seconds, as seconds (> 0)."""
    match = _INTERVAL.fullmatch(raw.strip().lower())
    seconds = float(match[1]) * (60 if match[2] == "m" else 1) if match else 0.0
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"not an interval (e.g. 10s, 1m, 30): {raw!r}")
    return seconds


class CodeTableMissing(UserError):
    """The code table is empty and could not be fetched: pushes wait."""


def one_pass(url: str, client: ProviderClient, settings: Settings) -> PushPass | None:
    """One pass on a connection of its own (the code table fetched first while it is empty)."""
    clock = RealClock()
    with connection.connect_url(url, autocommit=True) as conn:
        if stored_code_count(conn) == 0:
            try:
                refresh_delivery_codes(conn, client, clock)
            except UserError as exc:
                raise CodeTableMissing(f"no stored code table and the provider's could not be fetched ({exc}); "
                                       "receipt pushes wait in the inbox") from exc
        return reconcile_pushes(conn, clock, provider_timezone=settings.provider_timezone,
                                correlation_window_s=settings.correlation_window_s,
                                campaign_send_spread_s=settings.campaign_send_spread_s, hold_s=settings.claim_lease_s)


def reconcile_recent(args: argparse.Namespace, settings: Settings) -> int:
    url = connection.app_url(settings)
    with connection.connect_url(url) as conn:
        migrate.upgrade(conn)
    stop = threading.Event()
    last_error = None
    with stop_on_signals(stop.set, "stopping after this pass"), ProviderClient.from_settings(settings) as client:
        while not stop.is_set():
            try:
                done = one_pass(url, client, settings)
                last_error = None
            except Exception as exc:  # the loop outlives a bad pass (its transaction rolled back whole)
                if args.every is None:
                    raise
                last_error = report_failed_pass("reconcile recent", exc, last_error, log,
                                                (UserError, psycopg.OperationalError))
                done = None
            if done is not None and (done.reconciled or done.receipts.new_receipts):
                line = done.summary_line()
                log.info("reconcile recent: %s", line)
                print(f"{datetime.now(UTC).isoformat(timespec='seconds')} {line}", flush=True)
            if args.every is None or stop.wait(args.every):
                break
    return 0
