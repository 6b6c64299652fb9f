"""One receipt push, from the parameters the provider sent to the row the inbox stores.

Everything a push carries is checked here (docs/provider-contract.md#dlr-push-webhook):
ids are text of digits only (never through int or float, so an id above
2**63, with leading zeros or written as ``1.2e+18`` is kept or refused as
written), the transaction id's placeholders ("0", empty, "null", ...) mean
none (an OTP), the number goes through ``core.msisdn``, the error code is
1-16 letters or digits, and the two times are provider-local
``YYYY-MM-DD HH:MM:SS`` read with the DST rules of ``core.provider_time``.
A push that breaks a rule raises :class:`MalformedPush` with a short reason
that names the parameter, never its value.

:func:`redacted` is what a refused push is kept as: every value shortened
and its numbers masked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from sms_pipeline.core import msisdn
from sms_pipeline.core.ids import SENTINELS
from sms_pipeline.core.provider_time import InvalidLocalTime, local_date, parse_local
from sms_pipeline.provider.normalise import NUMBER_REGION

# What a delivered time says when there is none.
_NO_TIME = SENTINELS | {"0000-00-00 00:00:00"}
_ID = re.compile(r"[0-9]{1,64}", re.ASCII)
_ERROR_CODE = re.compile(r"[0-9A-Za-z]{1,16}", re.ASCII)
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}", re.ASCII)
# A kept value: at most this many characters; runs of more than _KEPT_DIGITS digits keep only their last two.
_KEPT_CHARS = 64
_KEPT_DIGITS = 4
_DIGIT_RUN = re.compile(r"[0-9]{%d,}" % (_KEPT_DIGITS + 1), re.ASCII)
# What may be a phone number written in groups ("+91 98765-43210", "98 76 54 32 10"): masked whole.
_NUMBER_DIGITS = 8
_NUMBER_LIKE = re.compile(r"[+(]?[0-9][0-9 ().-]*[0-9]", re.ASCII)

Parameters = Sequence[tuple[str, str]]


class MalformedPush(ValueError):
    """A push that breaks a rule; the text names the parameter and the rule, never a value."""


@dataclass(frozen=True, slots=True)
class Push:
    """A valid push, as the inbox stores it (``sql/queries/receiver_store_push.sql``)."""

    provider_message_id: str
    error_code: str
    provider_txn_id: str | None  # None for an OTP
    recipient: str  # E.164 digits
    provider_submit_at: datetime  # aware, UTC
    provider_done_at: datetime | None
    report_date: date  # the provider-local day of provider_submit_at

    def row(self) -> dict[str, Any]:
        return asdict(self)


def _single(params: Parameters, name: str) -> str | None:
    """The value of ``name`` (stripped); None when absent; a name given twice with different values is refused."""
    values = {value.strip() for key, value in params if key == name}
    if len(values) > 1:
        raise MalformedPush(f"{name} given twice with different values")
    return values.pop() if values else None


def _required(params: Parameters, name: str) -> str:
    value = _single(params, name)
    if not value:
        raise MalformedPush(f"{name} missing")
    return value


def _time(value: str, name: str, tz: ZoneInfo) -> datetime:
    if not _TIME.fullmatch(value):
        raise MalformedPush(f"{name} is not a time YYYY-MM-DD HH:MM:SS")
    try:
        return parse_local(value, tz)
    except (InvalidLocalTime, ValueError, OverflowError):  # a DST gap, 2026-02-30, year 0001 in UTC
        raise MalformedPush(f"{name} is not a valid date and time") from None


def parse(params: Parameters, names: Mapping[str, str], tz: ZoneInfo) -> Push:
    """The push of ``params`` (name, value pairs from the body and the query string).

    ``names`` maps each field (``settings.WEBHOOK_FIELDS``) to the parameter
    carrying it; ``tz`` is the provider's zone. Parameters by other names are
    ignored.
    """
    msg_name, txn_name = names["msg_id"], names["txn_id"]
    msg_id = _required(params, msg_name)
    if not _ID.fullmatch(msg_id) or msg_id in SENTINELS:
        raise MalformedPush(f"{msg_name} is not a message id (digits only)")
    txn_id = _single(params, txn_name)
    if txn_id in SENTINELS:  # an OTP has no transaction
        txn_id = None
    elif txn_id is not None and not _ID.fullmatch(txn_id):
        raise MalformedPush(f"{txn_name} is not a transaction id (digits only)")
    mobile_name = names["mobile"]
    try:
        recipient = msisdn.normalise(_required(params, mobile_name), NUMBER_REGION)
    except msisdn.InvalidRecipient:
        raise MalformedPush(f"{mobile_name} is not a valid phone number") from None
    code_name = names["error_code"]
    error_code = _required(params, code_name)
    if not _ERROR_CODE.fullmatch(error_code):
        raise MalformedPush(f"{code_name} is not 1 to 16 letters or digits")
    received_name, delivered_name = names["received_time"], names["delivered_time"]
    received = _time(_required(params, received_name), received_name, tz)
    raw_delivered = _single(params, delivered_name)
    delivered = None if raw_delivered is None or raw_delivered in _NO_TIME \
        else _time(raw_delivered, delivered_name, tz)
    if delivered is not None and delivered < received:
        raise MalformedPush(f"{delivered_name} is before {received_name}")
    return Push(provider_message_id=msg_id, error_code=error_code, provider_txn_id=txn_id, recipient=recipient,
                provider_submit_at=received, provider_done_at=delivered, report_date=local_date(received, tz))


def _mask_digits(value: str, keep: int = 2) -> str:
    digits = sum(ch.isdigit() for ch in value)
    seen = 0
    masked = []
    for ch in value:
        if ch.isdigit():
            seen += 1
            masked.append(ch if seen > digits - keep else "*")
        else:
            masked.append(ch)
    return "".join(masked)


def redact(value: str, *, number: bool = False) -> str:
    """``value`` safe to keep: cut to 64 characters, NUL spelled out; a ``number``, and any value made of
    eight digits or more with only the separators numbers are written with (a number under another name,
    perhaps in groups), keeps only its last two digits; any other value keeps runs of up to four digits
    (times, short codes) and the last two of longer ones."""
    value = value[:_KEPT_CHARS].replace("\x00", "\\0")  # a JSON document cannot hold NUL
    if number or (_NUMBER_LIKE.fullmatch(value) and sum(ch.isdigit() for ch in value) >= _NUMBER_DIGITS):
        return _mask_digits(value)
    return _DIGIT_RUN.sub(lambda run: _mask_digits(run.group()), value)


def redacted(params: Parameters, names: Mapping[str, str]) -> dict[str, str | list[str]]:
    """The parameters of a refused push as kept for a person: name -> redacted value (a list when repeated).

    Names are cut like values (they may be anything); the recipient's
    parameter is masked as a number whatever it holds.
    """
    mobile = names["mobile"]
    kept: dict[str, str | list[str]] = {}
    for name, value in params:
        shown = redact(value, number=name == mobile)
        key = redact(name)
        if key in kept:
            previous = kept[key]
            kept[key] = [*previous, shown] if isinstance(previous, list) else [previous, shown]
        else:
            kept[key] = shown
    return kept
