"""``sms-pipeline alerts test``: send a test alert to every configured destination."""

from __future__ import annotations

import argparse

from sms_pipeline.errors import UserError
from sms_pipeline.ops.alerts import NO_DESTINATION, Alert, deliver, destinations
from sms_pipeline.settings import Settings

TEST_ALERT = Alert(key="test", severity="INFO", title="test alert from sms-pipeline: delivery works")


def register(sub: argparse._SubParsersAction) -> None:
    alerts = sub.add_parser("alerts", help="alert delivery (webhook, mail)")
    commands = alerts.add_subparsers(dest="alerts_command", metavar="COMMAND", required=True)
    commands.add_parser("test", help="send a test alert to every configured destination").set_defaults(
        handler=send_test)


def send_test(args: argparse.Namespace, settings: Settings) -> int:
    targets = destinations(settings)
    if not targets:
        raise UserError(NO_DESTINATION)
    failed = 0
    for target in targets:
        delivered = deliver(TEST_ALERT, target)
        failed += not delivered
        print(f"{target.shown}: {'delivered' if delivered else 'failed (details in the log)'}")
    return 1 if failed else 0
