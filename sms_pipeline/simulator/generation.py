"""Deterministic ids and receipt timelines, from the seed and request content.

Nothing here draws from a shared random stream (concurrency would reorder
it): every value is a hash of the seed and of what identifies the thing it
belongs to. The same seed and the same request sequence therefore give the
same ids, outcomes and files.
"""

from __future__ import annotations

import hashlib
import struct
from typing import NamedTuple

# A share of msgIds lies above 2**63 (most of those have 20 digits), so that
# anything that squeezes ids into a signed 64-bit integer breaks in tests.
HIGH_MSG_ID_SHARE = 0.30
_LOW_FLOOR = 10**18  # every id has at least 19 digits, no leading zero
_SIGNED_LIMIT = 2**63


def _hasher(seed: int, *parts: object, size: int = 32) -> hashlib.blake2b:
    """A hash of the parts so far; ``copy()`` and ``update()`` it with the rest.

    Parts are joined by a unit separator, so hashing a prefix once and the
    remaining parts per item gives the same digest as hashing all at once.
    """
    text = "\x1f".join((str(seed), *map(str, parts)))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=size)


def _digest(seed: int, *parts: object, size: int = 32) -> bytes:
    return _hasher(seed, *parts, size=size).digest()


def _decimal_id(digest: bytes, high_share: float) -> str:
    value = int.from_bytes(digest[:8], "big")
    if int.from_bytes(digest[8:16], "big") < high_share * 2**64:
        return str(_SIGNED_LIMIT + value % _SIGNED_LIMIT)  # [2**63, 2**64)
    return str(_LOW_FLOOR + value % (_SIGNED_LIMIT - _LOW_FLOOR))  # [10**18, 2**63)


def transaction_id(seed: int, fingerprint: str, arrival: int) -> str:
    """19-digit transaction id of one request (below 2**63, like the documented samples)."""
    return _decimal_id(_digest(seed, "txn", fingerprint, arrival, size=16), 0.0)


def campaign_id(seed: int, fingerprint: str, arrival: int) -> str:
    return _decimal_id(_digest(seed, "campaign", fingerprint, arrival, size=16), 0.0)


def split_transaction_id(seed: int, fingerprint: str, arrival: int, part: int) -> str:
    """Transaction id of part ``part`` of a split campaign (part 0 is the request's own)."""
    if part == 0:
        return transaction_id(seed, fingerprint, arrival)
    return _decimal_id(_digest(seed, "txn", fingerprint, arrival, part, size=16), 0.0)


class MessageIds:
    """msgIds of the recipients of one request (the request's part hashed once).

    ``part`` is the transaction's part of a split campaign (0 otherwise); the
    ``repeat`` of a call separates a number listed twice in one request.
    """

    def __init__(self, seed: int, fingerprint: str, arrival: int, part: int) -> None:
        self._prefix = _hasher(seed, "msg", fingerprint, arrival, part, size=16)

    def __call__(self, mobile: str, repeat: int) -> str:
        hasher = self._prefix.copy()
        hasher.update(f"\x1f{mobile}\x1f{repeat}".encode())
        return _decimal_id(hasher.digest(), HIGH_MSG_ID_SHARE)


def msg_id(seed: int, fingerprint: str, arrival: int, part: int, mobile: str, repeat: int) -> str:
    """msgId of one recipient (see :class:`MessageIds`)."""
    return MessageIds(seed, fingerprint, arrival, part)(mobile, repeat)


def otp_code(seed: int, fingerprint: str, arrival: int, length: int, code_type: str) -> str:
    """A code for an OTP generate call that did not bring its own."""
    alphabet = {
        "num": "0123456789",
        "alpha": "ABCDEFGHJKLMNPQRSTUVWXYZ",
        "alphanum": "ABCDEFGHJKLMNPQRSTUVWXYZ23456789",
    }[code_type]
    digest = _digest(seed, "otp", fingerprint, arrival, size=max(16, length))
    return "".join(alphabet[b % len(alphabet)] for b in digest[:length])


class Status(NamedTuple):
    """One receipt status as each report shows it."""

    word: str  # SMPP word (day zip, getDlr)
    long_word: str  # by-transaction report's spelling
    cause: str
    long_cause: str  # by-transaction report's cause
    error_code: str
    final: bool


# Index = the outcome code stored per message. Never reorder (stored codes).
STATUSES: tuple[Status, ...] = (
    Status("SUBMITTED", "SUBMITTED", "Submitted", "Submitted", "", False),  # 0: no receipt yet
    Status("ACCEPTD", "ACCEPTED", "Accepted", "Accepted", "", False),  # 1
    Status("ENROUTE", "ENROUTE", "Enroute", "Enroute", "", False),  # 2
    Status("DELIVRD", "DELIVERED", "Delivered", "Success", "000", True),  # 3
    Status("UNDELIV", "UNDELIVERED", "Absent Subscriber", "Absent Subscriber", "001", True),  # 4
    Status("UNDELIV", "UNDELIVERED", "Handset Busy", "Handset Busy", "002", True),  # 5
    Status("UNDELIV", "UNDELIVERED", "DND", "DND", "003", True),  # 6
    Status("EXPIRED", "EXPIRED", "Expired", "Expired", "004", True),  # 7
    Status("REJECTD", "REJECTED", "Rejected by operator", "Rejected by operator", "005", True),  # 8
)
SUBMITTED, ACCEPTD, ENROUTE, DELIVRD = 0, 1, 2, 3
UNDELIV_CAUSES = (4, 5, 6)
EXPIRED, REJECTD = 7, 8
NEVER_FINAL = 0  # as a final outcome code: the message never gets a final receipt

# Shown instead of a final status by the unmapped_status fault.
UNMAPPED_WORDS: tuple[Status, ...] = (
    Status("BLACKLST", "BLACKLST", "Blacklisted", "Blacklisted", "006", True),
    Status("NCPR", "NCPR", "NCPR", "NCPR", "007", True),
)

_SECOND = 1000
_MINUTE = 60 * _SECOND
_HOUR = 60 * _MINUTE


class Timeline(NamedTuple):
    """What will happen to one message; times are ms after submission."""

    final: int  # outcome code of the final status, or NEVER_FINAL
    intermediate: int  # ACCEPTD / ENROUTE shown first, or SUBMITTED for none
    intermediate_ms: int
    final_ms: int
    noise: int  # 64 bits for the row-level fault draws


# Uniform draws from the first 16 bytes of a timeline digest: outcome (32 bits),
# intermediate (16), delay bucket (32), position in bucket (32), fraction (16).
_DRAWS = struct.Struct(">IHIIH")
_U32, _U16 = float(2**32), float(2**16)


def _delay_ms(u_bucket: float, u_within: float) -> int:
    """Mostly seconds, a tail of minutes and hours, ~1% reaching up to 72 h."""
    for share, low, high in (
        (0.85, 1 * _SECOND, 30 * _SECOND),
        (0.96, 30 * _SECOND, 60 * _MINUTE),
        (0.99, 1 * _HOUR, 12 * _HOUR),
        (1.00, 12 * _HOUR, 72 * _HOUR),
    ):
        if u_bucket < share:
            return low + int(u_within * (high - low))
    raise AssertionError("unreachable")


def timeline(seed: int, message_id: str, submitted_ms: int) -> Timeline:
    """The receipt timeline of one message: a pure function of its inputs.

    Final outcomes: ~88% DELIVRD, 6% UNDELIV (three causes), 2% EXPIRED,
    1% REJECTD, 3% never final. ~10% show ACCEPTD/ENROUTE first (and half of
    the never-final ones stay there).
    """
    d = _digest(seed, "timeline", message_id, submitted_ms)
    outcome, inter, bucket, within, fraction = _DRAWS.unpack_from(d)
    u_outcome, u_inter, u_bucket, u_within, u_fraction = (
        outcome / _U32, inter / _U16, bucket / _U32, within / _U32, fraction / _U16)
    delay = _delay_ms(u_bucket, u_within)
    if u_outcome < 0.88:
        final = DELIVRD
    elif u_outcome < 0.94:
        final = UNDELIV_CAUSES[int((u_outcome - 0.88) / 0.02)]
    elif u_outcome < 0.96:
        final = EXPIRED
        delay = 24 * _HOUR + int(u_within * 48 * _HOUR)  # validity runs out after a day or more
    elif u_outcome < 0.97:
        final = REJECTD
        delay = _SECOND + int(u_within * 4 * _SECOND)
    else:
        final = NEVER_FINAL
    shows_intermediate = u_inter < 0.10 or (final == NEVER_FINAL and u_inter < 0.5)
    intermediate = (ACCEPTD if d[16] & 1 else ENROUTE) if shows_intermediate else SUBMITTED
    intermediate_ms = int(delay * (0.05 + 0.45 * u_fraction))
    return Timeline(final, intermediate, intermediate_ms, delay, int.from_bytes(d[24:32], "big"))


def status_at(final: int, intermediate: int, intermediate_ms: int, final_ms: int, elapsed_ms: int) -> int:
    """Outcome code visible ``elapsed_ms`` after submission (latest event not after it)."""
    if final != NEVER_FINAL and elapsed_ms >= final_ms:
        return final
    if intermediate != SUBMITTED and elapsed_ms >= intermediate_ms:
        return intermediate
    return SUBMITTED


def row_fault_draw(noise: int, slot: int) -> float:
    """One of four independent uniform draws in [0, 1) from a message's noise."""
    return ((noise >> (16 * slot)) & 0xFFFF) / 65536


# Slots of the 64-bit noise, one per row-level fault (and the unmapped variant).
DUPLICATE_SLOT, NEIGHBOUR_SLOT, UNMAPPED_SLOT, UNMAPPED_VARIANT_SLOT = 0, 1, 2, 3


def shown_final(status: Status, noise: int, unmapped_rate: float) -> Status:
    """The final ``status`` as the reports show it: under the unmapped_status fault, an odd spelling."""
    if unmapped_rate and row_fault_draw(noise, UNMAPPED_SLOT) < unmapped_rate:
        return unmapped_variant(status, noise)
    return status


def unmapped_variant(status: Status, noise: int) -> Status:
    """The odd spelling the unmapped_status fault shows instead of ``status``."""
    pick = int(row_fault_draw(noise, UNMAPPED_VARIANT_SLOT) * 4)
    if pick < 2:
        return UNMAPPED_WORDS[pick]
    if pick == 2:
        return status._replace(word=status.word.lower(), long_word=status.long_word.lower())
    return status._replace(word=status.word + "  ", long_word=status.long_word + "  ")
