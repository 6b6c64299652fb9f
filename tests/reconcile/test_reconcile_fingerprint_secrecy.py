"""What is stored of an OTP's text gives its code away to nobody without the key (docs/design.md#text-fingerprint)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterator
from datetime import timedelta

from tests.support.otp import sent_codes
from tests.support.worker import TEXT_KEY

TEMPLATE = "Your code is $otp$"


def _codes_found(stored: set[bytes], digest: Callable[[bytes], bytes]) -> list[str]:
    """Every 6-digit code whose rendered text ``digest`` maps onto a stored fingerprint: all 10**6 tried."""
    prefix, suffix = (part.encode() for part in TEMPLATE.split("$otp$"))
    texts: Iterator[tuple[str, bytes]] = ((code, prefix + code.encode() + suffix)
                                          for code in (f"{n:06d}" for n in range(10**6)))
    return sorted(code for code, text in texts if digest(text) in stored)


def test_a_day_reports_otp_texts_cannot_be_recovered_from_what_is_stored_without_the_key(world):
    world.otp("919700000021", TEMPLATE)
    world.otp("919700000022", TEMPLATE)
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    stored = {row[0] for row in world.conn.execute(
        """SELECT message_fingerprint FROM dlr.day_report_rows
           UNION SELECT message_fingerprint FROM dlr.delivery_receipts
           UNION SELECT message_fingerprint FROM msg.outbound_message""").fetchall() if row[0] is not None}
    assert len(stored) == 2  # one per OTP: report, receipts and rows agree

    assert _codes_found(stored, lambda text: hashlib.sha256(text).digest()) == []
    wrong_key = b"a-guessed-text-key-0123456789abcdef"
    assert _codes_found(stored, lambda text: hmac.digest(wrong_key, text, "sha256")) == []
    # The same search with the key finds exactly the codes sent: only the key stands in the way.
    assert _codes_found(stored, lambda text: hmac.digest(TEXT_KEY, text, "sha256")) == sorted(
        code for _, code in sent_codes(world.sim, TEMPLATE))
