"""``sms-pipeline db upgrade|status|url|stop``."""

from __future__ import annotations

import argparse

from sms_pipeline.db import connection, embedded, migrate
from sms_pipeline.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    db = sub.add_parser("db", help="the database: migrations, status, DSN, embedded server")
    actions = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    actions.add_parser("upgrade", help="apply pending migrations").set_defaults(handler=upgrade)
    actions.add_parser("status", help="list applied and pending migrations").set_defaults(handler=status)
    actions.add_parser("url", help="print the active DSN (for psql or dbt)").set_defaults(handler=url)
    actions.add_parser("stop", help="stop the embedded Postgres").set_defaults(handler=stop)


def upgrade(args: argparse.Namespace, settings: Settings) -> int:
    with connection.connect(settings) as conn:
        done = migrate.upgrade(conn)
    if done:
        for m in done:
            print(f"applied V{m.version} {m.name}")
    else:
        print("database is up to date")
    return 0


def status(args: argparse.Namespace, settings: Settings) -> int:
    with connection.connect(settings) as conn:
        recorded = {a.version: a for a in migrate.applied(conn)}
    for m in migrate.discover():
        a = recorded.get(m.version)
        if a is None:
            print(f"V{m.version:<4} {m.name:<40} pending")
        else:
            flag = "" if a.checksum == m.checksum else "  CHANGED SINCE APPLIED"
            print(f"V{m.version:<4} {m.name:<40} applied {a.applied_at:%Y-%m-%d %H:%M:%S%z}{flag}")
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
