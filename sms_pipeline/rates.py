"""The rate card: CSV in, validated line by line, upserted idempotently.

Header: ``tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to``.
A price is valid on the provider-local days [valid_from, valid_to); an empty
``valid_to`` is open-ended. A row is identified by (tenant, channel, class,
valid_from): loading the same file twice changes nothing, and a corrected
price or end date for the same start updates that row. Overlapping periods
are refused by the database (two prices for one moment would make the cost a
guess). Prices are looked up in SQL at submission (``msg.unit_price``).

Unlike message intake, a card with any bad line loads nothing: a partial
price list would silently leave messages unpriced.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import psycopg
import pycountry
from psycopg import errors

from sms_pipeline.core.states import Channel, MessageClass
from sms_pipeline.db import queries
from sms_pipeline.errors import UserError
from sms_pipeline.core.input_lines import BadLine, InvalidField, member, without_bom

HEADER = ("tenant_id", "channel", "message_class", "unit_price", "currency", "valid_from", "valid_to")
# NUMERIC(12,4): up to 8 integer digits and 4 decimals, written plainly.
_PRICE = re.compile(r"\d{1,8}(\.\d{1,4})?", re.ASCII)
# ISO 4217 codes as pycountry lists them (its lookup ignores case; this set does not).
_CURRENCIES = frozenset(currency.alpha_3 for currency in pycountry.currencies)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


class RateCardRefused(UserError):
    """The rate card file cannot be loaded (bad lines, bad header, or an overlap)."""


@dataclass(frozen=True, slots=True)
class Rate:
    tenant_id: str
    channel: Channel
    message_class: MessageClass
    unit_price: Decimal
    currency: str
    valid_from: date
    valid_to: date | None

    @property
    def key(self) -> tuple[str, str, str, date]:
        return (self.tenant_id, self.channel.value, self.message_class.value, self.valid_from)


@dataclass(frozen=True, slots=True)
class RateLoad:
    inserted: int
    updated: int
    unchanged: int


def _date(value: str, name: str) -> date:
    if not _DATE.fullmatch(value):
        raise InvalidField(name, "must be an ISO date YYYY-MM-DD")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidField(name, "is not a calendar date") from None


def parse_rate(row: dict[str, str]) -> Rate:
    """One CSV record (already split by header) to a :class:`Rate`."""
    values = {name: (row.get(name) or "").strip() for name in HEADER}
    if not values["tenant_id"]:
        raise InvalidField("tenant_id", "must not be empty")
    channel = member(Channel, values["channel"], "channel")
    message_class = member(MessageClass, values["message_class"], "message_class")
    if not _PRICE.fullmatch(values["unit_price"]):
        raise InvalidField("unit_price", "must be a non-negative decimal with at most 8 digits "
                                         "before and 4 after the point, e.g. 0.0079")
    if values["currency"] not in _CURRENCIES:
        raise InvalidField("currency", "must be an ISO 4217 currency code in upper case, e.g. INR")
    valid_from = _date(values["valid_from"], "valid_from")
    valid_to = _date(values["valid_to"], "valid_to") if values["valid_to"] else None
    if valid_to is not None and valid_to <= valid_from:
        raise InvalidField("valid_to", "must be later than valid_from (the period is [valid_from, valid_to))")
    return Rate(values["tenant_id"], channel, message_class, Decimal(values["unit_price"]),
                values["currency"], valid_from, valid_to)


def parse_rate_card(lines: Iterable[str]) -> tuple[list[Rate], list[BadLine]]:
    """Every rate of a CSV text, and every refused line (line 1 is the header)."""
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None:
        return [], [BadLine(1, None, "the file is empty; expected the header " + ",".join(HEADER))]
    header = [without_bom(name).strip() for name in header]
    if tuple(header) != HEADER:
        return [], [BadLine(1, None, "the header must be exactly " + ",".join(HEADER))]
    rates: list[Rate] = []
    bad: list[BadLine] = []
    first_line_of_key: dict[tuple[str, str, str, date], int] = {}
    for record in reader:
        line_no = reader.line_num
        if not any(cell.strip() for cell in record):
            continue
        if len(record) != len(HEADER):
            bad.append(BadLine(line_no, None, f"expected {len(HEADER)} fields, got {len(record)}"))
            continue
        try:
            rate = parse_rate(dict(zip(HEADER, record)))
        except InvalidField as exc:
            bad.append(BadLine.from_error(line_no, exc))
            continue
        if rate.key in first_line_of_key:
            bad.append(BadLine(line_no, "valid_from",
                               f"the same tenant, channel, class and start as line {first_line_of_key[rate.key]}"))
            continue
        first_line_of_key[rate.key] = line_no
        rates.append(rate)
    return rates, bad


def load_rates(conn: psycopg.Connection, rates: Sequence[Rate]) -> RateLoad:
    """Upsert ``rates`` in one transaction; an overlap refuses the whole load."""
    with conn.transaction():
        queries.run(conn, "rates_stage_create")
        queries.run_many(conn, "rates_stage_insert", [
            {"tenant_id": r.tenant_id, "channel": r.channel.value, "message_class": r.message_class.value,
             "unit_price": r.unit_price, "currency": r.currency, "valid_from": r.valid_from,
             "valid_to": r.valid_to} for r in rates])
        try:
            # Updates first: a shortened period must be in place before the
            # row that continues it is inserted, or the two would overlap.
            updated = queries.run(conn, "rates_update_changed").rowcount
            inserted = queries.run(conn, "rates_insert_new").rowcount
        except errors.ExclusionViolation as exc:
            raise RateCardRefused(f"rate card refused, nothing loaded: {exc.diag.message_primary}") from None
    return RateLoad(inserted=inserted, updated=updated, unchanged=len(rates) - inserted - updated)
