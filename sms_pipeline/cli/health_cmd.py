"""``sms-pipeline health [--json]``: the dead man's switch, for cron and probes.

Every health reading and the Dagster daemon's heartbeat, judged with plain
SQL (no Dagster import: docs/design.md#health-outside-dagster). Exit 0 when
all are OK, 1 when the worst is a warning, 2 for an error, a database that
cannot be reached, or an embedded server that is not running (never started
here: a probe must not change what it observes).
"""

from __future__ import annotations

import argparse
import json

from sms_pipeline.core.clock import RealClock
from sms_pipeline.db import connection
from sms_pipeline.errors import UserError
from sms_pipeline.reconcile import health_report
from sms_pipeline.reconcile.health import Thresholds
from sms_pipeline.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "health", help="every health reading and the Dagster daemon's heartbeat; exit 0 OK, 1 warn, 2 error")
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of lines")
    parser.set_defaults(handler=health)


def health(args: argparse.Namespace, settings: Settings) -> int:
    try:
        app_url = connection.running_app_url(settings)
        report = health_report.evaluate(
            app_url, connection.with_database(app_url, settings.dagster_database), RealClock().now(),
            Thresholds(non_submission_grace_h=settings.non_submission_grace_h, zone=settings.provider_timezone))
    except UserError as exc:
        if args.json:  # a reader of the document learns why there is nothing else in it
            print(json.dumps({"status": "ERROR", "exit_code": 2, "error": str(exc), "readings": []}))
        raise  # the one line on stderr, exit 2
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        print_lines(report)
    return report.exit_code


def print_lines(report: health_report.Report) -> None:
    width = max(len(r.name) for r in report.readings)
    for r in report.readings:
        reason = "" if r.status == "OK" else f" - {r.description}"
        print(f"{r.name:<{width}}  {r.status:<5}  {r.value}  ({r.threshold}){reason}")
    print(f"health: {report.status}")
