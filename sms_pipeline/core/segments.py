"""SMS segment counting (GSM 03.38 / UCS-2), as billed on the air."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Encoding = Literal["GSM7", "UCS2"]
GSM7: Encoding = "GSM7"
UCS2: Encoding = "UCS2"

# GSM 03.38 default alphabet, in table order (0x1B, the escape, left out).
GSM7_BASIC: frozenset[str] = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅå"
    "Δ_ΦΓΛΩΠΨΣΘΞÆæßÉ"
    " !\"#¤%&'()*+,-./"
    "0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§"
    "¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
# Extension table: each is sent as ESC + char, so it costs two septets.
GSM7_EXTENSION: frozenset[str] = frozenset("\f^{}\\[]~|€")

SINGLE_CAPACITY = {GSM7: 160, UCS2: 70}
# Concatenated segments lose room to the user data header.
MULTI_CAPACITY = {GSM7: 153, UCS2: 67}


class EmptyBody(ValueError):
    """An empty message body; refused at intake."""


@dataclass(frozen=True, slots=True)
class SegmentCount:
    encoding: Encoding
    units: int  # septets for GSM7, UTF-16 code units for UCS2
    segments: int


_GSM7_ALL: frozenset[str] = GSM7_BASIC | GSM7_EXTENSION


def is_gsm7(text: str) -> bool:
    """True when every character is in the GSM 03.38 basic or extension table."""
    return _GSM7_ALL.issuperset(text)


def _units(text: str, encoding: Encoding) -> int:
    """Septets (GSM7) or UTF-16 code units (UCS2) of ``text``, counted in C (intake and sends call this per row)."""
    if encoding == GSM7:
        if GSM7_EXTENSION.isdisjoint(text):
            return len(text)
        return len(text) + sum(map(text.count, GSM7_EXTENSION))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2  # a lone surrogate: one unit, as before


def _unit_costs(text: str, encoding: Encoding) -> list[int]:
    if encoding == GSM7:
        return [2 if ch in GSM7_EXTENSION else 1 for ch in text]
    # Python iterates code points; those beyond the BMP are surrogate pairs.
    return [2 if ord(ch) > 0xFFFF else 1 for ch in text]


def count_segments(text: str) -> SegmentCount:
    """Encoding, units and segments of ``text``.

    The encoding is decided by the whole text: one character outside the GSM
    tables makes the entire message UCS-2. Concatenated segments are packed
    greedily per character, because an escape pair or a surrogate pair is
    never split across two segments.
    """
    if not isinstance(text, str):
        raise TypeError(f"message body must be a string, got {type(text).__name__}")
    if not text:
        raise EmptyBody("message body is empty")
    encoding = GSM7 if is_gsm7(text) else UCS2
    units = _units(text, encoding)
    if units <= SINGLE_CAPACITY[encoding]:
        return SegmentCount(encoding, units, 1)
    costs = _unit_costs(text, encoding)
    capacity = MULTI_CAPACITY[encoding]
    segments, used = 1, 0
    for cost in costs:
        if used + cost > capacity:
            segments, used = segments + 1, 0
        used += cost
    return SegmentCount(encoding, units, segments)
