"""What the report endpoints show, computed from a ledger snapshot and the clock.

A message's visible status is the latest event of its timeline not after the
time of the call, so a later call of the same report can show newer statuses
(late receipts). Row-level faults (duplicated rows, a row in the neighbouring
day's file, unmapped status words) are applied here, decided per msgId.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple
from zoneinfo import ZoneInfo

from sms_pipeline.simulator import generation
from sms_pipeline.simulator.generation import STATUSES, Status
from sms_pipeline.simulator.state import BilledRequest, LedgerView

DAY_REPORT_HEADER = (
    "Message Id", "Transaction Id", "Mobile No", "Sender Name", "Message", "Msg Type",
    "Submit Time", "Delivery Time", "Status", "Cause", "Error Code", "Units",
)
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def csv_field(text: str) -> str:
    """RFC 4180: quote a field holding a comma, a quote or a line break."""
    if any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


class LocalTimes:
    """Provider-local renderings of millisecond epochs, memoised per minute.

    UTC offsets are whole minutes, so one minute shares its local prefix; a
    day file formats the same few thousand minutes a million times.
    """

    _SECONDS = tuple(f"{n:02d}" for n in range(60))

    def __init__(self, tz: ZoneInfo) -> None:
        self._tz = tz
        self._plain: dict[int, str] = {}
        self._human: dict[int, str] = {}

    def _local(self, minute: int) -> datetime:
        if len(self._plain) > 200_000:  # bounded, whatever the spread of times
            self._plain.clear()
            self._human.clear()
        return (_EPOCH + timedelta(minutes=minute)).astimezone(self._tz)

    def plain(self, ms: int) -> str:
        """``YYYY-MM-DD HH:MM:SS``."""
        seconds = ms // 1000
        minute = seconds // 60
        prefix = self._plain.get(minute)
        if prefix is None:
            prefix = self._plain[minute] = self._local(minute).strftime("%Y-%m-%d %H:%M:")
        return prefix + self._SECONDS[seconds % 60]

    def human(self, ms: int) -> str:
        """``July 13, 2019 03:44:48`` (the by-transaction report's form)."""
        seconds = ms // 1000
        minute = seconds // 60
        prefix = self._human.get(minute)
        if prefix is None:
            t = self._local(minute)
            prefix = self._human[minute] = f"{_MONTHS[t.month - 1]} {t.day}, {t.year} {t.hour:02d}:{t.minute:02d}:"
        return prefix + self._SECONDS[seconds % 60]


class ResolvedRow(NamedTuple):
    request: BilledRequest
    row: int
    status: Status
    delivery_ms: int | None  # time of the final receipt, None while there is none


def _days(first: date, last: date) -> Iterator[date]:
    day = first
    while day <= last:
        yield day
        day += timedelta(days=1)


def requests_on(view: LedgerView, days: Iterable[date]) -> Iterator[BilledRequest]:
    """Requests submitted on the given provider-local days, in billing order per day."""
    for day in days:
        for index in view.ledger.by_day.get(day, ()):
            if index >= view.request_count:
                break  # billed after the snapshot
            yield view.ledger.requests[index]


def resolve(view: LedgerView, requests: Iterable[BilledRequest], unmapped_rate: float) -> Iterator[ResolvedRow]:
    """Each recipient of ``requests`` with its status as of the snapshot time."""
    ledger, now_ms = view.ledger, view.now_ms
    final, final_ms = ledger.final, ledger.final_ms
    intermediate, intermediate_ms, noise = ledger.intermediate, ledger.intermediate_ms, ledger.noise
    for req in requests:
        elapsed = now_ms - req.submitted_ms
        for row in range(req.first_row, req.first_row + req.count):
            status = STATUSES[generation.status_at(final[row], intermediate[row], intermediate_ms[row],
                                                   final_ms[row], elapsed)]
            delivery_ms = None
            if status.final:
                delivery_ms = req.submitted_ms + final_ms[row]
                status = generation.shown_final(status, noise[row], unmapped_rate)
            yield ResolvedRow(req, row, status, delivery_ms)


def filed_day(req: BilledRequest, noise: int, neighbour_rate: float) -> date:
    """The day file a row lands in: its own day, or a neighbour's under the fault.

    Rows from the second half of a day drift into the next day's file, rows
    from the first half into the previous one, as a time-zone mix-up would.
    """
    if neighbour_rate and generation.row_fault_draw(noise, generation.NEIGHBOUR_SLOT) < neighbour_rate:
        return req.local_day + timedelta(days=1 if req.afternoon else -1)
    return req.local_day


def day_report_chunks(view: LedgerView, day: date, tz: ZoneInfo, rates: dict[str, float],
                      chunk_rows: int = 2000) -> Iterator[str]:
    """CSV text of the day file for ``day`` (header first), in chunks of lines.

    Per-request fields are formatted once per request, so the per-row work is
    a status lookup and one f-string.
    """
    times = LocalTimes(tz)
    neighbour, duplicate = rates["neighbour_day"], rates["duplicate_rows"]
    days = (day - timedelta(days=1), day, day + timedelta(days=1)) if neighbour else (day,)
    ledger = view.ledger
    msg_ids, mobiles, noise = ledger.msg_ids, ledger.mobiles, ledger.noise
    lines = [",".join(DAY_REPORT_HEADER) + "\r\n"]
    status_fields: dict[Status, str] = {}  # "word,cause,code" per status, quoted once
    current: BilledRequest | None = None
    prefix = suffix = ""
    for req, row, status, delivery_ms in resolve(view, requests_on(view, days), rates["unmapped_status"]):
        if neighbour and filed_day(req, noise[row], neighbour) != day:
            continue
        if req is not current:
            current = req
            prefix = f"{req.transaction_id},"
            suffix = (f",{csv_field(req.sender)},{csv_field(req.text)},{csv_field(req.msg_type)},"
                      f"{times.plain(req.submitted_ms)},")
        delivery = "" if delivery_ms is None else times.plain(delivery_ms)
        shown = status_fields.get(status)
        if shown is None:
            shown = status_fields[status] = f"{csv_field(status.word)},{csv_field(status.cause)},{status.error_code}"
        line = f"{msg_ids[row]},{prefix}{mobiles[row]}{suffix}{delivery},{shown},{req.units}\r\n"
        lines.append(line)
        if duplicate and generation.row_fault_draw(noise[row], generation.DUPLICATE_SLOT) < duplicate:
            lines.append(line)
        if len(lines) >= chunk_rows:
            yield "".join(lines)
            lines.clear()
    if lines:
        yield "".join(lines)


def _ms(value: int | None) -> str:
    return "0" if value is None else str(value)


def dlr_page(view: LedgerView, first: date, last: date, unmapped_rate: float, page_no: int, page_limit: int,
             mobile: str | None = None) -> tuple[int, list[dict[str, str]]]:
    """(total rows, rows of 1-based page ``page_no``) of getDlr over [first, last].

    Pages count recipients in billing order, so they stay stable while new
    traffic arrives. Without a mobile filter whole requests before the page
    are skipped by their size, so late pages cost no more than early ones.
    """
    ledger = view.ledger
    requests = list(requests_on(view, _days(first, last)))
    if mobile is not None:
        requests = [
            req._replace(first_row=row, count=1)
            for req in requests
            for row in range(req.first_row, req.first_row + req.count)
            if ledger.mobiles[row] == mobile
        ]
    total = sum(req.count for req in requests)
    start, end = (page_no - 1) * page_limit, page_no * page_limit
    page: list[BilledRequest] = []
    offset = 0
    for req in requests:
        low, high = max(start - offset, 0), min(end - offset, req.count)
        if low < high:
            page.append(req._replace(first_row=req.first_row + low, count=high - low))
        offset += req.count
        if offset >= end:
            break
    rows = [
        {
            "msgId": ledger.msg_ids[r.row],
            "uuId": r.request.transaction_id,
            "mobileNo": ledger.mobiles[r.row],
            "senderName": r.request.sender,
            "text": r.request.text,
            "status": r.status.word,
            "cause": r.status.cause,
            "errorCode": r.status.error_code,
            "submitTime": str(r.request.submitted_ms),
            "deliveryTime": _ms(r.delivery_ms),
        }
        for r in resolve(view, page, unmapped_rate)
    ]
    return total, rows


def transaction_rows(view: LedgerView, transaction_id: str, first: date, last: date, tz: ZoneInfo,
                     unmapped_rate: float) -> list[dict[str, object]]:
    """By-transaction rows: nested status object, human-readable local times."""
    ledger = view.ledger
    times = LocalTimes(tz)
    requests = [
        ledger.requests[i]
        for i in ledger.by_transaction.get(transaction_id, ())
        if i < view.request_count and first <= ledger.requests[i].local_day <= last
    ]
    return [
        {
            "msgId": ledger.msg_ids[r.row],
            "mobileNo": ledger.mobiles[r.row],
            "senderName": r.request.sender,
            "status": {"Status": r.status.long_word, "Cause": r.status.long_cause},
            "submitTime": times.human(r.request.submitted_ms),
            "deliveryTime": "" if r.delivery_ms is None else times.human(r.delivery_ms),
        }
        for r in resolve(view, requests, unmapped_rate)
    ]


def summary_rows(view: LedgerView, first: date, last: date, groupby: str, units_offset: int) -> list[dict[str, str]]:
    """Totals per date (or per date and sender id); units from the ledger.

    The ``summary_units_offset`` fault is added to the first row, so the
    summary disagrees with the ledger by exactly that many units.
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for r in resolve(view, requests_on(view, _days(first, last)), 0.0):
        key = (r.request.local_day.isoformat(), r.request.sender if groupby == "senderid" else "")
        total = groups.setdefault(key, [0, 0, 0, 0, 0])
        total[0] += 1
        if r.status.word == "DELIVRD":
            total[1] += 1
        elif r.status.final:
            total[2] += 1
        else:
            total[3] += 1
        total[4] += r.request.units
    ordered = sorted(groups.items())
    if ordered:
        ordered[0][1][4] += units_offset
    return [
        {"date": day, "senderid": sender, "total": str(t[0]), "delivered": str(t[1]),
         "failed": str(t[2]), "pending": str(t[3]), "units": str(t[4])}
        for (day, sender), t in ordered
    ]
