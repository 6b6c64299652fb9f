"""``sms-pipeline otp verify``: check a code someone entered (consumes it when right).

One line per result, and an exit code a script can branch on:

| result        | exit | line                                                   |
|---------------|------|--------------------------------------------------------|
| ok            | 0    | ok: code accepted                                      |
| wrong         | 1    | wrong: not the code (N attempts left)                  |
| expired       | 3    | expired: the code's time is up; send a new one         |
| used          | 4    | used: the code was already accepted once               |
| locked        | 5    | locked: too many wrong attempts; send a new one        |
| no_such_code  | 6    | no_such_code: no code was sent for this recipient, ... |

(2 is every command's exit code for a usage or configuration error.)
"""

from __future__ import annotations

import argparse
import sys

from sms_pipeline.core.clock import RealClock
from sms_pipeline.db import connection, migrate
from sms_pipeline.errors import UserError
from sms_pipeline.otp import codes
from sms_pipeline.otp.verify import InvalidRecipient, Verification, VerifyResult, check_code
from sms_pipeline.settings import Settings

EXIT_CODES = {
    VerifyResult.ok: 0,
    VerifyResult.wrong: 1,
    VerifyResult.expired: 3,
    VerifyResult.used: 4,
    VerifyResult.locked: 5,
    VerifyResult.no_such_code: 6,
}
_EXPLANATIONS = {
    VerifyResult.ok: "code accepted",
    VerifyResult.expired: "the code's time is up; send a new one",
    VerifyResult.used: "the code was already accepted once",
    VerifyResult.locked: "too many wrong attempts; send a new one",
    VerifyResult.no_such_code: "no code was sent for this recipient, purpose and session",
}


def register(sub: argparse._SubParsersAction) -> None:
    otp = sub.add_parser("otp", help="one-time passwords")
    actions = otp.add_subparsers(dest="otp_command", metavar="ACTION", required=True)
    verify = actions.add_parser(
        "verify", help="check an entered code against the newest one sent (consumes it when right)",
        description="Exit codes: " + ", ".join(f"{result.value} {code}" for result, code in EXIT_CODES.items())
                    + "; 2 usage or configuration error.")
    verify.add_argument("--tenant", required=True)
    verify.add_argument("--recipient", required=True, help="the phone number the code was sent to")
    verify.add_argument("--purpose", required=True, help="what the code authorises, as given at intake")
    verify.add_argument("--code", required=True,
                        help="the entered code; '-' reads it from standard input (keeps it out of process lists)")
    verify.add_argument("--session", default=None, help="the session binding given at intake, if any")
    verify.set_defaults(handler=verify_code)


def _entered_code(raw: str) -> str:
    code = sys.stdin.readline() if raw == "-" else raw
    if not code.strip():
        raise UserError("--code is empty")
    return code


def describe(verification: Verification) -> str:
    """The one line printed for a result (never the code, never the number)."""
    result = verification.result
    if result is VerifyResult.wrong:
        left = verification.attempts_left
        return f"wrong: not the code ({left} attempt{'' if left == 1 else 's'} left)"
    return f"{result.value}: {_EXPLANATIONS[result]}"


def verify_code(args: argparse.Namespace, settings: Settings) -> int:
    code = _entered_code(args.code)
    key = codes.hmac_key(settings.otp_hmac_key, settings.home)
    url = connection.app_url(settings)
    with connection.connect_url(url, autocommit=True) as conn:
        migrate.upgrade(conn)
        try:
            verification = check_code(conn, args.tenant, args.recipient, args.purpose, code, args.session,
                                      hmac_key=key, clock=RealClock())
        except InvalidRecipient as exc:
            raise UserError(f"--recipient: {exc}") from None
    print(describe(verification))
    return EXIT_CODES[verification.result]
