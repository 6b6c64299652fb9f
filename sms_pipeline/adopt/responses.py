"""What a legacy sender's stored ``response`` says about each recipient (pure, no I/O).

The legacy column holds whatever the old code kept: the provider's JSON send
answer (docs/provider-contract.md#send), a bare transaction id, nothing, or
something else. Only an id that is certainly the provider's, digit for
digit, is usable: everything else leaves the row ``unknown`` for the day
reports to settle (docs/adoption.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from sms_pipeline.core import msisdn
from sms_pipeline.core.ids import SENTINELS
from sms_pipeline.provider.normalise import LIST_SEPARATOR, NUMBER_REGION, SEND_FIELDS, STATUS_KEY, SUCCESS_STATUS

# The provider's transaction ids are 19 digits in every example; a few digits of slack either way.
_ID_DIGITS = re.compile(r"[0-9]{15,20}", re.ASCII)
# What a number turned into by a float prints as: 6.305583318236811e+18, 6.3E18.
_EXPONENT = re.compile(r"[+-]?[0-9]+(\.[0-9]*)?[eE][+-]?[0-9]+", re.ASCII)
# Above this a float cannot hold every integer: an id that equals its float's rounding has been one.
_FLOAT_EXACT = 2**53


class Problem(StrEnum):
    """Why a response gives no usable transaction id (kept as the adoption's evidence)."""

    empty = "empty"  # nothing stored, or a placeholder ("0", "null")
    unparseable = "unparseable"  # neither JSON nor an id
    exponent = "exponent"  # exponent notation: passed through a float
    digits = "digits"  # not 15-20 digits (cut, padded, a decimal point, a bigint's lost zeros...)
    float_rounded = "float_rounded"  # above 2^53 and equal to a float's rounding of itself
    not_accepted = "not_accepted"  # a JSON answer whose status is not success


@dataclass(frozen=True)
class ParsedResponse:
    transaction_id: str | None  # usable: the provider's id, as text, digit for digit
    problem: Problem | None  # why there is none (None when there is)
    invalid: frozenset[str]  # invalidMobile, normalised (E.164 digits)
    accepted: frozenset[str] | None  # mobile, normalised; None when the answer does not list them
    # invalidMobile entries that are no phone number at all ("12345"), trimmed: such a legacy recipient is
    # still rejected (stored as written), not dropped.
    invalid_unreadable: frozenset[str] = frozenset()

    @property
    def mangled(self) -> bool:
        """An id was there but lost digits on the way (what `adopt inspect` lists)."""
        return self.problem in (Problem.exponent, Problem.digits, Problem.float_rounded)


def check_id(text: str) -> tuple[str | None, Problem | None]:
    """(the id, None) when ``text`` is a usable transaction id, else (None, why not)."""
    value = text.strip()
    if value in SENTINELS:
        return None, Problem.empty
    if _EXPONENT.fullmatch(value):
        return None, Problem.exponent
    if not _ID_DIGITS.fullmatch(value):
        return None, Problem.digits
    number = int(value)
    if number > _FLOAT_EXACT and int(float(number)) == number:
        return None, Problem.float_rounded
    return value, None


def _numbers(value: object, region: str) -> tuple[frozenset[str], frozenset[str]]:
    """A list field of the answer (comma-joined text, or a JSON array): (the normalised numbers, the
    trimmed entries that are no number)."""
    items = value if isinstance(value, list) else str(value or "").split(LIST_SEPARATOR)
    found, unreadable = set(), set()
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            found.add(msisdn.normalise(text, region))
        except msisdn.InvalidRecipient:
            unreadable.add(text)
    return frozenset(found), frozenset(unreadable)


def _from_answer(answer: Mapping[str, object], region: str) -> ParsedResponse:
    invalid, invalid_unreadable = _numbers(answer.get(SEND_FIELDS["invalid"]), region)
    listed = answer.get(SEND_FIELDS["accepted"])
    accepted = _numbers(listed, region)[0] if listed not in (None, "", []) else None
    raw_id = answer.get(SEND_FIELDS["transaction_id"])
    text_id = None if raw_id is None or isinstance(raw_id, (dict, list, bool)) else str(raw_id)
    transaction_id, problem = check_id(text_id) if text_id is not None else (None, Problem.empty)
    status = answer.get(STATUS_KEY)
    if status is not None and str(status).lower() != SUCCESS_STATUS:
        transaction_id, problem = None, Problem.not_accepted
    return ParsedResponse(transaction_id, problem, invalid, accepted, invalid_unreadable)


def parse_response(raw: str | None, region: str = NUMBER_REGION) -> ParsedResponse:
    """Read a stored response: a JSON send answer, a JSON string, or a bare id."""
    text = (raw or "").strip()
    if text in SENTINELS:
        return ParsedResponse(None, Problem.empty, frozenset(), None)
    if text[0] in '{["':
        try:
            # Numbers stay text: a JSON number id must be read digit for digit, never through a float.
            value = json.loads(text, parse_int=str, parse_float=str, parse_constant=str)
        except (ValueError, RecursionError):
            return ParsedResponse(None, Problem.unparseable, frozenset(), None)
        if isinstance(value, dict):
            return _from_answer(value, region)
        if not isinstance(value, str):
            return ParsedResponse(None, Problem.unparseable, frozenset(), None)
        text = value.strip()
    if _EXPONENT.fullmatch(text) or re.fullmatch(r"[0-9][0-9.]*", text, re.ASCII):
        transaction_id, problem = check_id(text)
        return ParsedResponse(transaction_id, problem, frozenset(), None)
    if text in SENTINELS:
        return ParsedResponse(None, Problem.empty, frozenset(), None)
    return ParsedResponse(None, Problem.unparseable, frozenset(), None)


class Outcome(StrEnum):
    """What the adoption makes of one legacy recipient."""

    submitted = "submitted"  # a usable id: billed at created_at, the day report settles it
    rejected = "rejected"  # listed in invalidMobile: not billed
    unknown = "unknown"  # sent, no usable id: only the day report can tell
    unsent = "unsent"  # the legacy row was never sent: skipped (cutover --include-unsent)


def attempted(sent: bool | None, raw: str | None) -> bool:
    """Whether the legacy sender sent the row: ``sent`` true, unset with an answer stored, or false with a
    usable transaction id stored (the provider took it, whatever the flag says: sending it again would
    reach the customer twice)."""
    if sent is None:
        return bool((raw or "").strip())
    return sent or parse_response(raw).transaction_id is not None


def outcome(parsed: ParsedResponse, sent: bool | None, raw: str | None, recipient: str) -> Outcome:
    """The outcome for ``recipient`` (normalised) of a legacy row whose response parsed as ``parsed``."""
    if not attempted(sent, raw):
        return Outcome.unsent
    if recipient in parsed.invalid or recipient in parsed.invalid_unreadable:
        return Outcome.rejected
    if parsed.transaction_id is not None and (parsed.accepted is None or recipient in parsed.accepted):
        return Outcome.submitted
    return Outcome.unknown
