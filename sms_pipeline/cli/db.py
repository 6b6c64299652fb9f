"""``sms-pipeline db upgrade|status|url|stop``."""

from __future__ import annotations

import argparse

from sms_pipeline.db import connection, embedded, migrate
from sms_pipeline.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    db = sub.add_parser("db", help="the database: migrations, status, DSN, embedded server")
    actions = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    actions.add_parser("upgrade", help="apply pending migrations").set_defaults(handler=upgrade)
    actions.add_parser("status", help="list applied and pending migrations, repeatables included"
                       ).set_defaults(handler=status)
    actions.add_parser("url", help="print the active DSN (for psql or dbt)").set_defaults(handler=url)
    actions.add_parser("stop", help="stop the embedded Postgres").set_defaults(handler=stop)


def upgrade(args: argparse.Namespace, settings: Settings) -> int:
    with connection.connect(settings) as conn:
        done = migrate.upgrade(conn)
    if done:
        for m in done:
            print(f"applied {m.label}")
    else:
        print("database is up to date")
    return 0


def status(args: argparse.Namespace, settings: Settings) -> int:
    with connection.connect(settings) as conn:
        recorded = {a.version: a for a in migrate.applied(conn)}
        recorded_repeatables = {a.name: a for a in migrate.applied_repeatables(conn)}
    for m in migrate.discover():
        a = recorded.get(m.version)
        if a is None:
            print(f"V{m.version:<4} {m.name:<40} pending")
        else:
            flag = "" if a.checksum == m.checksum else "  CHANGED SINCE APPLIED"
            print(f"V{m.version:<4} {m.name:<40} applied {a.applied_at:%Y-%m-%d %H:%M:%S%z}{flag}")
    # Repeatables: a changed one is not an error, the next upgrade applies it again.
    repeatables = migrate.discover_repeatables()
    for r in repeatables:
        ra = recorded_repeatables.get(r.name)
        if ra is None:
            print(f"R     {r.name:<40} pending")
        elif ra.checksum != r.checksum:
            print(f"R     {r.name:<40} changed, pending (last applied {ra.applied_at:%Y-%m-%d %H:%M:%S%z})")
        else:
            print(f"R     {r.name:<40} applied {ra.applied_at:%Y-%m-%d %H:%M:%S%z}")
    for name in sorted(set(recorded_repeatables) - {r.name for r in repeatables}):
        print(f"R     {name:<40} applied, but its file is gone (what it defined stays)")
    return 0


def url(args: argparse.Namespace, settings: Settings) -> int:
    print(connection.app_url(settings))
    return 0


def stop(args: argparse.Namespace, settings: Settings) -> int:
    if settings.database_url:
        print("an external database is configured (SMS_PIPELINE_DATABASE_URL); nothing to stop")
    elif embedded.stop(settings.home):
        print("embedded Postgres stopped")
    else:
        print("embedded Postgres was not running")
    return 0
