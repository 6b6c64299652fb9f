"""``sms-pipeline messages forget --recipient R [--tenant T]``: erase a recipient (docs/design.md#redaction-and-erasure).

Added to the ``messages`` group by ``worker_cmds``; prints the rows changed per
table (0 everywhere on a second run), never the number.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial

from sms_pipeline import hmac_keys
from sms_pipeline.core import msisdn
from sms_pipeline.core.clock import RealClock
from sms_pipeline.db import connection
from sms_pipeline.errors import UserError
from sms_pipeline.reconcile.erasure import forget_recipient
from sms_pipeline.settings import Settings


def add_parser(message_actions: argparse._SubParsersAction, database_url: Callable[[Settings], str]) -> None:
    """``database_url``: the group's own way to the migrated application database."""
    forget = message_actions.add_parser(
        "forget", help="erase a recipient's number and the bodies sent to it from every table (keeps ids, "
                       "states and cost); later loads keep it erased")
    forget.add_argument("--recipient", required=True, help="the number, in any usual form")
    forget.add_argument("--tenant", help="only this tenant's messages (receipts have no tenant: always erased)")
    forget.set_defaults(handler=partial(forget_messages, database_url=database_url))


def forget_messages(args: argparse.Namespace, settings: Settings, *, database_url: Callable[[Settings], str]) -> int:
    try:
        recipient = msisdn.normalise(args.recipient)
    except msisdn.InvalidRecipient:
        raise UserError("--recipient is not a valid phone number") from None
    with connection.connect_url(database_url(settings), autocommit=True) as conn:
        changed = forget_recipient(conn, recipient, tenant=args.tenant, text_key=hmac_keys.text_key(settings),
                                   now=RealClock().now(), provider_timezone=settings.provider_timezone,
                                   non_submission_grace_h=settings.non_submission_grace_h)
    width = max(map(len, changed))
    for table, rows in changed.items():
        print(f"{table:<{width}}  {rows:>8} rows erased")
    print("nothing left to erase" if not any(changed.values()) else
          f"{sum(changed.values())} rows erased; the recipient is remembered only as a keyed tombstone")
    return 0
