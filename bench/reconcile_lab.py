"""A provider day kept ready to reconcile, for trying one statement at a time.

    python bench/reconcile_lab.py build [--messages 1000000]
    python bench/reconcile_lab.py trial [--explain STATEMENT]

``build`` (minutes, once): the setup of ``bench/reconcile_day.py`` (a simulator
bills the day, the outbound rows go in through their triggers) and the day
report's load, into the database ``reconcile_lab_template``; the day and the
settings a trial needs go into ``reconcile_lab.json`` in the home folder.

``trial``: a new database copied from the template (``CREATE DATABASE ...
TEMPLATE``), migrated to the tree being run (a changed R__ file is applied
again), vacuumed and checkpointed; then ``reconcile_day`` with each named
statement timed, and what it left (states, receipt dispositions, registry
entries) to compare trees by. With ``--explain``, that statement runs under
``EXPLAIN (ANALYZE, BUFFERS)`` instead (its first run, for a statement the
run repeats), its plan is printed (trigger times included) and the run stops
there, rolled back.

A trial's figures are for comparing statements, not for the ratio to the
floor: that is ``bench/reconcile_day.py``'s, whose setup is the same.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import date, datetime, time as clock_time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from pydantic import SecretStr

from sms_pipeline import hmac_keys
from sms_pipeline import settings as settings_module
from sms_pipeline.core.clock import FrozenClock
from sms_pipeline.db import connection, migrate
from sms_pipeline.ingest.day_report import load_day_report
from sms_pipeline.provider.client import ProviderClient

from day_traffic import (TZ_NAME, TrafficDay, load_outbound_rows, local_instant, prepare_database,
                         settings_environ, simulated_traffic)
from reconcile_day import explaining, reconcile_with, timed_statements

TEMPLATE = "reconcile_lab_template"
TRIAL = "reconcile_lab_trial"


class Explained(Exception):
    """Raised after the explained statement: the reconciliation's transaction rolls back."""


def state_file(settings: settings_module.Settings) -> Path:
    return Path(settings.home) / "reconcile_lab.json"


def recreate(admin: str, name: str, template: str | None = None) -> str:
    with connection.connect_url(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    return connection.with_database(admin, name)


def build(admin: str, messages: int, state: Path) -> None:
    day = datetime.now(ZoneInfo(TZ_NAME)).date() - timedelta(days=3)
    download_at = local_instant(day + timedelta(days=1), clock_time(2, 0))  # the daily job's tick
    url = recreate(admin, TEMPLATE)
    with connection.connect_url(url, autocommit=True) as conn:
        migrate.upgrade(conn)
        prepare_database(conn, day)
    with tempfile.TemporaryDirectory(prefix="reconcile-lab-") as tmp, \
            simulated_traffic([TrafficDay(day, messages)], download_at, Path(tmp)) as traffic:
        environ = settings_environ(url, traffic.base_url, day - timedelta(days=10))
        settings = settings_module.load({**os.environ, **environ})
        with connection.connect_url(url, autocommit=True) as conn, \
                ProviderClient(traffic.base_url, "demo", SecretStr("demo"), None, settings.provider_timezone,
                               read_timeout=600, requests_per_s=1000) as client:
            load_outbound_rows(conn, traffic, hmac_keys.text_key(settings))
            load_day_report(conn, client, day, settings.provider_timezone, FrozenClock(download_at),
                            text_key=hmac_keys.text_key(settings))
            conn.execute("VACUUM ANALYZE")
    # The provider is not needed again: the day report is loaded. The text key is the one the rows
    # were fingerprinted with.
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"day": day.isoformat(), "download_at": download_at.isoformat(),
                                 "environ": environ}))
    print(f"built {TEMPLATE}: {messages:,} messages of {day.isoformat()}")


def trial(admin: str, state: Path, explain: str | None) -> None:
    if not state.exists():
        raise SystemExit(f"no lab day in {state.parent}: run `python bench/reconcile_lab.py build` first")
    recorded = json.loads(state.read_text())
    url = recreate(admin, TRIAL, TEMPLATE)
    settings = settings_module.load({**os.environ, **recorded["environ"], "SMS_PIPELINE_DATABASE_URL": url})
    clock = FrozenClock(datetime.fromisoformat(recorded["download_at"]))
    with connection.connect_url(url, autocommit=True) as conn:
        migrate.upgrade(conn)
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")
        if explain:
            try:
                with explaining(explain, stop=Explained()):
                    reconcile_with(conn, date.fromisoformat(recorded["day"]), settings, clock)
            except Explained:
                return
        with timed_statements() as spent:
            started = time.perf_counter()
            reconcile_with(conn, date.fromisoformat(recorded["day"]), settings, clock)
            total = time.perf_counter() - started
        left = {
            "states": dict(conn.execute("SELECT state::text, count(*) FROM msg.outbound_message GROUP BY 1 ORDER BY 1")),
            "receipts": dict(conn.execute(
                "SELECT concat_ws('/', disposition, correlation_result), count(*) FROM dlr.delivery_receipts "
                "GROUP BY 1 ORDER BY 1")),
            "registry": conn.execute("SELECT count(*) FROM msg.provider_message_id_registry").fetchone()[0],
        }
    print(json.dumps({"reconcile_s": round(total, 2),
                      "statements_s": {name: round(s, 2) for name, s in sorted(spent.items(), key=lambda kv: -kv[1])},
                      **left}, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build").add_argument("--messages", type=int, default=1_000_000)
    commands.add_parser("trial").add_argument("--explain", metavar="STATEMENT",
                                              help="a named statement of sql/queries, e.g. reconcile_apply_messages")
    args = parser.parse_args()
    settings = settings_module.load()
    admin = connection.server_url(settings)
    if args.command == "build":
        build(admin, args.messages, state_file(settings))
    else:
        trial(admin, state_file(settings), args.explain)


if __name__ == "__main__":
    main()
