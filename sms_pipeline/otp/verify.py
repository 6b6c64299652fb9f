"""Verify a code someone entered: :func:`verify_otp`, one atomic statement.

The statement (``sql/queries/otp_verify.sql``) finds the newest code sent to
the recipient for the purpose and session binding, locks it, decides and
writes the decision in one go: single use, expiry, the attempt limit, and
exactly one winner when two verifications of one code race. The code itself
never reaches the database: its HMAC does, compared there on equal-length
digests.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import psycopg

from sms_pipeline.core import msisdn
from sms_pipeline.core.clock import Clock, RealClock
from sms_pipeline.db import queries
from sms_pipeline.otp import codes


class VerifyResult(StrEnum):
    ok = "ok"  # the right code, now consumed
    wrong = "wrong"  # not the code; one attempt counted
    expired = "expired"  # the code's time is up
    used = "used"  # the code was already accepted once
    locked = "locked"  # too many wrong attempts; ask for a new code
    no_such_code = "no_such_code"  # nothing was sent for this recipient, purpose and session


@dataclass(frozen=True, slots=True)
class Verification:
    result: VerifyResult
    attempts_left: int  # wrong attempts still allowed on the newest code (0 when there is none)


class InvalidRecipient(ValueError):
    """The recipient given to a verification is not a phone number (the number stays out of the text)."""


def verify_otp(conn: psycopg.Connection, tenant: str, recipient: str, purpose: str, code: str,
               session_binding: str | None = None, *, hmac_key: bytes,
               clock: Clock | None = None) -> VerifyResult:
    """Check ``code`` against the newest code sent to ``recipient`` for ``purpose``; consume it if right.

    ``recipient`` may be written in any form intake accepts; ``code`` is
    compared as sent (surrounding blanks dropped, letters upper-case).
    ``hmac_key`` is :func:`sms_pipeline.otp.codes.hmac_key` of the settings
    the workers use. Commits (a savepoint inside an open transaction).
    """
    return check_code(conn, tenant, recipient, purpose, code, session_binding, hmac_key=hmac_key,
                      clock=clock).result


def check_code(conn: psycopg.Connection, tenant: str, recipient: str, purpose: str, code: str,
               session_binding: str | None = None, *, hmac_key: bytes,
               clock: Clock | None = None) -> Verification:
    """:func:`verify_otp` with the attempts left, for callers that tell the person how many remain."""
    try:
        number = msisdn.normalise(recipient)
    except msisdn.InvalidRecipient:
        raise InvalidRecipient("the recipient is not a valid phone number") from None
    digest = codes.code_hmac(hmac_key, tenant, number, codes.normalise_entered(code))
    now = (clock or RealClock()).now()
    with conn.transaction():
        result, attempts_left = queries.run(
            conn, "otp_verify", tenant_id=tenant, recipient=number, purpose=purpose,
            session_binding=session_binding, code_hmac=digest, now=now).fetchone()
    return Verification(VerifyResult(result), attempts_left)
