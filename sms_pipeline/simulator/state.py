"""The simulator's memory: the billing ledger, OTP codes, pending schedules.

The ledger is append-only and compact: one tuple per billed *request* (text,
sender, transaction, time shared by all its recipients) and parallel arrays
per billed *recipient* (msgId, number, receipt timeline). Receipt events are
never stored: the status a report shows is computed from the timeline and
the clock (see ``generation.status_at``), so a day of a million messages
costs a few hundred bytes each.

Reads take a snapshot (the current ``_Ledger`` object and its lengths) under
the lock and then work without it; arrays only grow, and ``reset`` swaps in a
new ledger instead of clearing the old one, so a report being written keeps a
consistent view.
"""

from __future__ import annotations

import functools
import hmac
import re
import threading
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from sms_pipeline.core.clock import Clock
from sms_pipeline.core.otp import PLACEHOLDER_OTP
from sms_pipeline.core.provider_time import local_date
from sms_pipeline.core.segments import count_segments
from sms_pipeline.simulator import generation, statefile
from sms_pipeline.simulator.faults import ROW_FAULTS, FaultConfig, draw, fires

E = TypeVar("E")  # an entry of a send: a number, or a (position, (number, text)) of an XML send

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CAMPAIGN_SPLIT = 1000  # recipients per transaction of a scheduled campaign [assumed]
# The drop fault loses a transaction this long after accepting it: the answer and a campaign/read right after it
# still list it (so a sender can map its rows), later reads do not.
DROP_AFTER_MS = 60_000
XML_MAX_MESSAGES = 1000  # <sms> per XML send; more is code 414, nothing billed [assumed]
OTP_TRANSACTION_ID = "0"
DEFAULT_MOBILE_PATTERNS = (r"91[6-9]\d{9}",)  # India: 91 + 10 digits starting 6-9 [assumed]
_SENDER = re.compile(r"[A-Za-z0-9]{3,11}")
UNFILLED_TEMPLATE_VARIABLE = "{#var#}"
DEFAULT_WEBHOOK_RATE = 10  # pushes per second when the registration names none [doc]
MAX_WEBHOOK_RATE = 10_000  # [assumed]
_MAX_WEBHOOK_URL = 2048  # [assumed]


def epoch_ms(dt: datetime) -> int:
    return (dt - _EPOCH) // timedelta(milliseconds=1)


def from_epoch_ms(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


class ProviderError(Exception):
    """An application error the API answers with ``status: error`` and a code."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"{code} {reason}")
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class Credentials:
    userid: str = "demo"
    password: str = "demo"
    api_key: str = "demo-key"

    def __repr__(self) -> str:
        return f"Credentials(userid={self.userid!r}, password='***', api_key='***')"

    def check(self, userid: str | None, password: str | None, api_key: str | None) -> ProviderError | None:
        if not userid:
            return ProviderError("213", "userid missing")
        if userid != self.userid:
            return ProviderError("216", "Invalid credentials")
        # Constant-time comparisons: the simulator should not teach bad habits.
        if api_key is not None and hmac.compare_digest(api_key.encode(), self.api_key.encode()):
            return None
        if password is not None and hmac.compare_digest(password.encode(), self.password.encode()):
            return None
        return ProviderError("216", "Invalid credentials")


class BilledRequest(NamedTuple):
    """What all recipients of one billed request share."""

    transaction_id: str
    campaign_id: str | None
    sender: str
    msg_type: str
    text: str
    units: int  # per recipient
    submitted_ms: int
    fingerprint: str
    first_row: int
    count: int
    local_day: date
    afternoon: bool  # submitted in the second half of the local day (neighbour_day fault)


class LedgerEntry(NamedTuple):
    """One billed recipient, as the admin endpoint and tests see it."""

    transaction_id: str
    msg_id: str
    mobile: str
    units: int
    sender: str
    msg_type: str
    submitted_at: datetime
    fingerprint: str
    campaign_id: str | None


class SendRequest(NamedTuple):
    sender: str
    msg_type: str
    text: str
    mobiles: Sequence[str]
    duplicate_check: bool
    schedule_time: datetime | None
    test_message: bool


class PersonalisedRequest(NamedTuple):
    """An XML send: shared sender and type, then (mobile, text) per message, in request order."""

    sender: str
    msg_type: str
    messages: Sequence[tuple[str, str]]
    duplicate_check: bool
    test_message: bool


class SendReceipt(NamedTuple):
    transaction_id: str
    accepted: tuple[str, ...]
    invalid: tuple[str, ...]
    campaign_id: str | None
    request_time: datetime


class OtpReceipt(NamedTuple):
    mobile: str
    create_time: datetime
    retry_after_s: int
    kind: str  # "new" or "retry" (an earlier code was still valid)


@dataclass
class _OtpCode:
    code: str
    expires_ms: int
    created_ms: int
    used: bool = False


@dataclass
class _Schedule:
    """A scheduled request (one transaction of a campaign) not yet released."""

    request: SendRequest
    recipients: tuple[str, ...]
    fingerprint: str
    arrival: int
    part: int
    transaction_id: str
    campaign_id: str
    created_ms: int
    due_ms: int
    updated_ms: int | None = None
    # scheduled | completed | cancelled | failed (no credits at its time) | dropped (the fault: listed nowhere)
    state: str = "scheduled"
    drops_at_ms: int | None = None  # the drop fault: lost this long after it was accepted, unless sent first
    late_ms: int = 0  # late_scheduled_send_s when accepted: sent (and billed) this long after due_ms

    @property
    def sends_at_ms(self) -> int:
        return self.due_ms + self.late_ms


@dataclass
class _Ledger:
    requests: list[BilledRequest] = field(default_factory=list)
    msg_ids: list[str] = field(default_factory=list)
    mobiles: list[str] = field(default_factory=list)
    final: array = field(default_factory=lambda: array("B"))
    intermediate: array = field(default_factory=lambda: array("B"))
    intermediate_ms: array = field(default_factory=lambda: array("I"))
    final_ms: array = field(default_factory=lambda: array("I"))
    noise: array = field(default_factory=lambda: array("Q"))
    by_day: dict[date, array] = field(default_factory=dict)  # local day -> request indices
    by_transaction: dict[str, list[int]] = field(default_factory=dict)  # txn id -> request indices


@functools.lru_cache(maxsize=256)
def _local_day(tz: ZoneInfo, submitted_ms: int) -> tuple[date, bool]:
    """(provider-local day, afternoon?) of a submit time; an XML send asks once per message, at one time."""
    local = from_epoch_ms(submitted_ms).astimezone(tz)
    return local.date(), local.hour >= 12


def _index_request(ledger: _Ledger, tz: ZoneInfo, txn_id: str, campaign: str | None, sender: str, msg_type: str,
                   text: str, units: int, submitted_ms: int, fingerprint: str, first_row: int) -> None:
    """Record the request whose recipients are the rows from ``first_row`` on (appended already)."""
    local_day, afternoon = _local_day(tz, submitted_ms)
    index = len(ledger.requests)
    ledger.requests.append(
        BilledRequest(
            transaction_id=txn_id,
            campaign_id=campaign,
            sender=sender,
            msg_type=msg_type,
            text=text,
            units=units,
            submitted_ms=submitted_ms,
            fingerprint=fingerprint,
            first_row=first_row,
            count=len(ledger.msg_ids) - first_row,
            local_day=local_day,
            afternoon=afternoon,
        )
    )
    ledger.by_day.setdefault(local_day, array("I")).append(index)
    if txn_id != OTP_TRANSACTION_ID:
        ledger.by_transaction.setdefault(txn_id, []).append(index)


class LedgerView(NamedTuple):
    """A consistent snapshot: the ledger object, its sizes and the time of reading."""

    ledger: _Ledger
    request_count: int
    now_ms: int


class Webhook(NamedTuple):
    """The registered receipt-push URL and its rate (pushes per second)."""

    url: str
    rate: int
    registered_ms: int  # receipts of messages billed from then on are pushed


class PushSink(Protocol):
    """What the push dispatcher (pushes.py) hears from the ledger; called with the state's lock held."""

    def billed(self, ledger: _Ledger, request_index: int, early_rows: Sequence[int],
               answer_key: tuple[str, int] | None, due_after_ms: int | None = None) -> None:
        """Request ``request_index`` was billed while a webhook is registered: queue its final receipts.

        ``early_rows`` are pushed before the answer to ``answer_key`` (fingerprint, arrival);
        with ``due_after_ms`` only receipts due later are queued.
        """

    def cleared(self) -> None:
        """The ledger or the registration went away: forget every queued push."""


def _checked_webhook(url: str, rate: str) -> tuple[str, int]:
    """(url, rate) of a registration, or ProviderError 400 [assumed code]."""
    url = url.strip()
    parts = urlsplit(url)
    if (parts.scheme not in ("http", "https") or not parts.hostname or len(url) > _MAX_WEBHOOK_URL
            or any(ch.isspace() for ch in url)):
        raise ProviderError("400", "smswebhook must be an http or https URL")
    try:
        value = int(rate.strip())
    except ValueError:
        raise ProviderError("400", "smswebhookrate must be a whole number of events per second") from None
    if not 1 <= value <= MAX_WEBHOOK_RATE:
        raise ProviderError("400", f"smswebhookrate must be between 1 and {MAX_WEBHOOK_RATE}")
    return url, value


class SimulatorState:
    """Ledger, OTP codes and schedules of one simulated provider account."""

    def __init__(
        self,
        *,
        clock: Clock,
        seed: int = 0,
        timezone: ZoneInfo | str = "Asia/Kolkata",
        credentials: Credentials | None = None,
        faults: FaultConfig | None = None,
        mobile_patterns: Sequence[str] = DEFAULT_MOBILE_PATTERNS,
        otp_retry_after_s: int = 30,
        report_retention_days: int = 90,
    ) -> None:
        self.clock = clock
        self.seed = seed
        self.timezone = timezone if isinstance(timezone, ZoneInfo) else ZoneInfo(timezone)
        self.credentials = credentials or Credentials()
        self.faults = faults or FaultConfig()
        self.otp_retry_after_s = otp_retry_after_s
        self.report_retention_days = report_retention_days
        self._valid_mobile = re.compile("|".join(f"(?:{p})" for p in mobile_patterns))
        self._lock = threading.RLock()
        self._save_lock = threading.Lock()  # one writer of a state file at a time
        self.credits: int | None = None  # None: unlimited
        self._revision = 0  # bumped by every change a state file holds (see ``changes``)
        self._push_sink: PushSink | None = None
        self._reset_traffic()

    def _reset_traffic(self) -> None:
        self._ledger = _Ledger()
        self._arrivals: dict[str, int] = {}  # request fingerprint -> arrivals so far
        self._otp: dict[str, _OtpCode] = {}
        self._schedules: dict[str, _Schedule] = {}  # by transaction id
        self._campaigns: dict[str, list[str]] = {}  # campaign id -> transaction ids
        self.webhook: Webhook | None = None
        if self._push_sink is not None:
            self._push_sink.cleared()

    def reset(self) -> None:
        """Forget all traffic (ledger, OTP codes, schedules) and the webhook; keep faults, clock and credits."""
        with self._lock:
            self._reset_traffic()
            self._revision += 1

    # ----- receipt push (see pushes.py) --------------------------------------

    def attach_pushes(self, sink: PushSink) -> None:
        with self._lock:
            self._push_sink = sink

    def webhook_create(self, url: str, rate: str) -> Webhook:
        checked_url, checked_rate = _checked_webhook(url, rate or str(DEFAULT_WEBHOOK_RATE))
        with self._lock:
            if self.webhook is not None:
                raise ProviderError("409", "A webhook is already registered")
            self.webhook = Webhook(checked_url, checked_rate, epoch_ms(self.now()))
            self._revision += 1
            return self.webhook

    def webhook_read(self) -> Webhook:
        with self._lock:
            if self.webhook is None:
                raise ProviderError("404", "No webhook registered")
            return self.webhook

    def webhook_update(self, url: str | None, rate: str | None) -> Webhook:
        """Change the URL and/or the rate; queued receipts go to the new URL at the new rate."""
        if url is None and rate is None:
            raise ProviderError("400", "smswebhook or smswebhookrate is required")
        with self._lock:
            current = self.webhook_read()
            checked_url, checked_rate = _checked_webhook(current.url if url is None else url,
                                                         str(current.rate) if rate is None else rate)
            self.webhook = current._replace(url=checked_url, rate=checked_rate)
            self._revision += 1
            return self.webhook

    def webhook_delete(self) -> None:
        """Unregister: receipts not yet pushed are never pushed."""
        with self._lock:
            self.webhook_read()
            self.webhook = None
            self._revision += 1
            if self._push_sink is not None:
                self._push_sink.cleared()

    def changes(self) -> tuple[int, int | None]:
        """Differs from an earlier answer once anything a state file holds changed (faults aside)."""
        with self._lock:
            return self._revision, self.credits

    # ----- time -------------------------------------------------------------

    def now(self) -> datetime:
        return self.clock.now()

    def local_today(self) -> date:
        return local_date(self.now(), self.timezone)

    # ----- arrivals (for deterministic ids and fault draws) ---------------

    def arrival(self, fingerprint: str) -> int:
        """Ordinal of this request among identical ones (0 for the first).

        The fingerprint covers the path and every parameter but the
        credentials, so identical means identical in all that matters.
        """
        with self._lock:
            ordinal = self._arrivals.get(fingerprint, 0)
            self._arrivals[fingerprint] = ordinal + 1
            self._revision += 1
            return ordinal

    # ----- sends ------------------------------------------------------------

    def is_valid_mobile(self, mobile: str) -> bool:
        return self._valid_mobile.fullmatch(mobile) is not None

    def _check_message(self, sender: str, text: str) -> int:
        if not _SENDER.fullmatch(sender or ""):
            raise ProviderError("231", "Invalid sender id")
        if not text:
            raise ProviderError("230", "Template mismatch: empty message")
        if UNFILLED_TEMPLATE_VARIABLE in text:
            raise ProviderError("230", "Template mismatch")
        return count_segments(text).segments

    def submit_personalised(self, request: PersonalisedRequest, fingerprint: str, arrival: int) -> SendReceipt:
        """Validate, bill and record one XML send: each message billed by its own body's segments.

        One transaction id for the request. A message whose number is not
        valid, or whose body the quick send would refuse (empty, an unfilled
        template variable), is listed in ``invalid`` and not billed
        [assumed]; the others are billed like quick-send messages, each
        with its own text in the ledger and the reports.
        """
        if len(request.messages) > XML_MAX_MESSAGES:
            raise ProviderError("414", f"Too many messages: at most {XML_MAX_MESSAGES} per request")
        if not _SENDER.fullmatch(request.sender or ""):
            raise ProviderError("231", "Invalid sender id")
        kept, invalid = self._sort_recipients(
            list(enumerate(request.messages)), lambda entry: entry[1][0], request.duplicate_check,
            refused=lambda entry: (not self.is_valid_mobile(entry[1][0]) or not entry[1][1]
                                   or UNFILLED_TEMPLATE_VARIABLE in entry[1][1]))
        # (index, mobile, text, segments)
        taken = [(index, mobile, text, count_segments(text).segments) for index, (mobile, text) in kept]
        txn_id = generation.transaction_id(self.seed, fingerprint, arrival)
        with self._lock:
            now = self.now()
            now_ms = epoch_ms(now)
            self._release_due_schedules(now_ms)
            if not request.test_message:
                self._charge(sum(segments for *_, segments in taken))
                for index, mobile, text, segments in taken:
                    # One billed request per message (its own text and units); the
                    # message's index as the id "part" keeps a repeated number's msgIds apart.
                    single = SendRequest(request.sender, request.msg_type, text, (mobile,), False, None, False)
                    self._append(single, (mobile,), segments, txn_id, None, fingerprint, arrival, now_ms, index)
        return SendReceipt(txn_id, tuple(mobile for _, mobile, _, _ in taken), tuple(invalid), None, now)

    def _charge(self, units: int) -> None:
        if self.credits is not None:
            if units > self.credits:
                raise ProviderError("301", "Insufficient credits")
            self.credits -= units

    @staticmethod
    def _sort_recipients(entries: list[E], mobile_of: Callable[[E], str], duplicate_check: bool, *,
                         refused: Callable[[E], bool]) -> tuple[list[E], list[str]]:
        """(the entries a send takes, the refused numbers): with ``duplicate_check`` a repeated number is
        dropped, in neither list; none taken is the provider's 235."""
        taken: list[E] = []
        invalid: list[str] = []
        seen: set[str] = set()
        for entry in entries:
            mobile = mobile_of(entry)
            if refused(entry):
                invalid.append(mobile)
            elif not (duplicate_check and mobile in seen):
                taken.append(entry)
                seen.add(mobile)
        if not taken:
            raise ProviderError("235", "No valid mobile number")
        return taken, invalid

    def submit(self, request: SendRequest, fingerprint: str, arrival: int) -> SendReceipt:
        """Validate, bill and record one /send request (or schedule it)."""
        segments = self._check_message(request.sender, request.text)
        accepted, invalid = self._sort_recipients(list(request.mobiles), lambda mobile: mobile,
                                                  request.duplicate_check,
                                                  refused=lambda mobile: not self.is_valid_mobile(mobile))
        txn_id = generation.transaction_id(self.seed, fingerprint, arrival)
        with self._lock:
            now = self.now()
            now_ms = epoch_ms(now)
            self._release_due_schedules(now_ms)
            scheduled = request.schedule_time is not None and epoch_ms(request.schedule_time) > now_ms
            campaign = None
            if scheduled:
                campaign = self._schedule(request, tuple(accepted), fingerprint, arrival, now_ms)
                txn_id = self._campaigns[campaign][0]
            elif not request.test_message:
                self._charge(segments * len(accepted))
                self._append(request, accepted, segments, txn_id, None, fingerprint, arrival, now_ms)
        return SendReceipt(txn_id, tuple(accepted), tuple(invalid), campaign, now)

    def _append(
        self,
        request: SendRequest,
        recipients: Sequence[str],
        segments: int,
        txn_id: str,
        campaign: str | None,
        fingerprint: str,
        arrival: int,
        submitted_ms: int,
        part: int = 0,
        answered: bool = True,
    ) -> None:
        """Bill ``recipients``: one request tuple plus one array slot each (lock held).

        ``answered``: billed by a request that gets an answer (not a schedule's release),
        so a receipt can be pushed before it (the push_early fault).
        """
        ledger = self._ledger
        seed = self.seed
        repeats: dict[str, int] = {}
        first_row = len(ledger.msg_ids)
        message_ids = generation.MessageIds(seed, fingerprint, arrival, part)
        sink = self._push_sink if self.webhook is not None else None
        early_rate = self.faults.rate("push_early") if sink is not None and answered else 0.0
        early_rows: list[int] = []
        for mobile in recipients:
            repeat = repeats.get(mobile, 0)
            repeats[mobile] = repeat + 1
            message_id = message_ids(mobile, repeat)
            line = generation.timeline(seed, message_id, submitted_ms)
            if (early_rate and line.final != generation.NEVER_FINAL
                    and fires(early_rate, seed, "push_early", message_id)):
                # The final receipt at once, so that its push can beat the send's answer.
                self.faults.count("push_early")
                line = line._replace(intermediate=generation.SUBMITTED, intermediate_ms=0, final_ms=0)
                early_rows.append(len(ledger.msg_ids))
            ledger.msg_ids.append(message_id)
            ledger.mobiles.append(mobile)
            ledger.final.append(line.final)
            ledger.intermediate.append(line.intermediate)
            ledger.intermediate_ms.append(line.intermediate_ms)
            ledger.final_ms.append(line.final_ms)
            ledger.noise.append(line.noise)
        _index_request(ledger, self.timezone, txn_id, campaign, request.sender, request.msg_type, request.text,
                       segments, submitted_ms, fingerprint, first_row)
        if sink is not None:
            sink.billed(ledger, len(ledger.requests) - 1, early_rows, (fingerprint, arrival))
        self._revision += 1

    # ----- scheduled sends ------------------------------------------------

    def _schedule(
        self, request: SendRequest, recipients: tuple[str, ...], fingerprint: str, arrival: int, now_ms: int
    ) -> str:
        campaign = generation.campaign_id(self.seed, fingerprint, arrival)
        txn_ids = []
        assert request.schedule_time is not None
        for part, start in enumerate(range(0, len(recipients), CAMPAIGN_SPLIT)):
            txn_id = generation.split_transaction_id(self.seed, fingerprint, arrival, part)
            self._schedules[txn_id] = _Schedule(
                request=request,
                recipients=recipients[start : start + CAMPAIGN_SPLIT],
                fingerprint=fingerprint,
                arrival=arrival,
                part=part,
                transaction_id=txn_id,
                campaign_id=campaign,
                created_ms=now_ms,
                due_ms=epoch_ms(request.schedule_time),
                late_ms=self.faults.parameter("late_scheduled_send_s") * 1000,
            )
            txn_ids.append(txn_id)
        self._campaigns[campaign] = txn_ids
        if fires(self.faults.rate("drop_scheduled_transaction"), self.seed, "drop_scheduled_transaction",
                 fingerprint, arrival):
            self.faults.count("drop_scheduled_transaction")
            part = int(draw(self.seed, "drop_scheduled_transaction/part", fingerprint, arrival) * len(txn_ids))
            self._schedules[txn_ids[part]].drops_at_ms = now_ms + DROP_AFTER_MS
        self._revision += 1
        return campaign

    def _release_due_schedules(self, now_ms: int) -> None:
        """Submit (and bill) every schedule whose time has come (lock held); first lose what the drop fault
        loses by then."""
        for sched in self._schedules.values():
            if sched.state == "scheduled" and sched.drops_at_ms is not None and sched.drops_at_ms <= min(
                    now_ms, sched.sends_at_ms - 1):
                sched.state = "dropped"
                self._revision += 1
        due = sorted(
            (s for s in self._schedules.values() if s.state == "scheduled" and s.sends_at_ms <= now_ms),
            key=lambda s: (s.sends_at_ms, s.transaction_id),
        )
        for sched in due:
            if sched.request.test_message:  # validated, never sent nor billed, as an unscheduled test send
                sched.state = "completed"
                self._revision += 1
                continue
            segments = count_segments(sched.request.text).segments
            try:
                self._charge(segments * len(sched.recipients))
            except ProviderError:
                sched.state = "failed"
                self._revision += 1
                continue
            self._append(sched.request, sched.recipients, segments, sched.transaction_id, sched.campaign_id,
                         sched.fingerprint, sched.arrival, sched.sends_at_ms, sched.part, answered=False)
            sched.state = "completed"

    def schedules(self) -> list[_Schedule]:
        with self._lock:
            self._release_due_schedules(epoch_ms(self.now()))
            return [s for s in self._schedules.values() if s.state == "scheduled"]

    def _pending_schedule(self, transaction_id: str, now_ms: int) -> _Schedule:
        """The still-pending schedule of a transaction (lock held), else a 404 error."""
        self._release_due_schedules(now_ms)
        sched = self._schedules.get(transaction_id)
        if sched is None or sched.state != "scheduled":
            raise ProviderError("404", "No pending schedule with this uuid")
        sched.updated_ms = now_ms
        self._revision += 1
        return sched

    def update_schedule(self, transaction_id: str, due: datetime) -> None:
        with self._lock:
            now_ms = epoch_ms(self.now())
            # A time already past sends it now: never billed at an instant before the change.
            self._pending_schedule(transaction_id, now_ms).due_ms = max(epoch_ms(due), now_ms)
            self._release_due_schedules(now_ms)

    def delete_schedule(self, transaction_id: str) -> None:
        with self._lock:
            self._pending_schedule(transaction_id, epoch_ms(self.now())).state = "cancelled"

    def campaign(self, campaign_id: str) -> list[_Schedule]:
        with self._lock:
            self._release_due_schedules(epoch_ms(self.now()))
            listed = (self._schedules[t] for t in self._campaigns.get(campaign_id, ()))
            return [s for s in listed if s.state != "dropped"]

    def split_of(self, campaign_id: str) -> list[str]:
        """The transaction ids a campaign was split into, in request order, those the drop fault lost
        included (campaign/read hides them): what a test holds against the provider's listing."""
        with self._lock:
            return list(self._campaigns.get(campaign_id, ()))

    # ----- OTP --------------------------------------------------------------

    def otp_generate(
        self,
        *,
        mobile: str,
        sender: str,
        msg_type: str,
        template: str,
        code: str,
        expiry_s: int,
        fingerprint: str,
        arrival: int,
    ) -> OtpReceipt:
        if not self.is_valid_mobile(mobile):
            raise ProviderError("235", "No valid mobile number")
        if PLACEHOLDER_OTP not in template:
            raise ProviderError("230", f"Template mismatch: no {PLACEHOLDER_OTP} placeholder")
        text = template.replace(PLACEHOLDER_OTP, code)
        segments = self._check_message(sender, text)
        with self._lock:
            now = self.now()
            now_ms = epoch_ms(now)
            previous = self._otp.get(mobile)
            if previous is not None and now_ms - previous.created_ms < self.otp_retry_after_s * 1000:
                raise ProviderError("429", f"Retry after {self.otp_retry_after_s} seconds")
            self._charge(segments)
            request = SendRequest(sender, msg_type, text, (mobile,), False, None, False)
            self._append(request, (mobile,), segments, OTP_TRANSACTION_ID, None, fingerprint, arrival, now_ms)
            kind = "retry" if previous is not None and not previous.used and previous.expires_ms > now_ms else "new"
            self._otp[mobile] = _OtpCode(code=code, expires_ms=now_ms + expiry_s * 1000, created_ms=now_ms)
            self._revision += 1
        return OtpReceipt(mobile, now, self.otp_retry_after_s, kind)

    def otp_verify(self, mobile: str, code: str) -> None:
        """Accept the latest code for ``mobile`` once; raise ProviderError otherwise."""
        with self._lock:
            entry = self._otp.get(mobile)
            now_ms = epoch_ms(self.now())
            if entry is None or entry.used:
                raise ProviderError("404", "No OTP pending for this mobile")
            if entry.expires_ms <= now_ms:
                raise ProviderError("410", "OTP expired")
            if not hmac.compare_digest(entry.code.encode(), (code or "").encode()):
                raise ProviderError("401", "Invalid OTP")
            entry.used = True
            self._revision += 1

    # ----- reading ----------------------------------------------------------

    def view(self) -> LedgerView:
        """A snapshot to read reports from without holding the lock."""
        with self._lock:
            now_ms = epoch_ms(self.now())
            self._release_due_schedules(now_ms)
            return LedgerView(self._ledger, len(self._ledger.requests), now_ms)

    def ledger_entries(self, *, transaction_id: str | None = None) -> Iterator[LedgerEntry]:
        """Every billed recipient, in billing order (optionally of one transaction)."""
        view = self.view()
        ledger = view.ledger
        indices: Sequence[int]
        if transaction_id is None:
            indices = range(view.request_count)
        elif transaction_id == OTP_TRANSACTION_ID:  # OTP sends are not indexed by transaction
            indices = [i for i in range(view.request_count)
                       if ledger.requests[i].transaction_id == OTP_TRANSACTION_ID]
        else:
            indices = [i for i in ledger.by_transaction.get(transaction_id, ()) if i < view.request_count]
        for index in indices:
            req = ledger.requests[index]
            submitted = from_epoch_ms(req.submitted_ms)
            for row in range(req.first_row, req.first_row + req.count):
                yield LedgerEntry(req.transaction_id, ledger.msg_ids[row], ledger.mobiles[row], req.units,
                                  req.sender, req.msg_type, submitted, req.fingerprint, req.campaign_id)

    def ledger_size(self) -> int:
        with self._lock:
            return len(self._ledger.msg_ids)

    def billed_units(self) -> int:
        view = self.view()
        return sum(r.units * r.count for r in view.ledger.requests[: view.request_count])

    # ----- the state file (see statefile.py) ---------------------------------

    def report_faults(self) -> dict[str, float | int]:
        """The fault settings that shape report contents (not requests): saved with the state."""
        return {**{name: self.faults.rate(name) for name in ROW_FAULTS},
                "summary_units_offset": self.faults.parameter("summary_units_offset")}

    def save(self, path: Path | str) -> tuple[int, int | None]:
        """Write the ledger and all else the answers follow from to ``path``, atomically.

        That is: every billed request with its recipients' msgIds and
        timelines, the arrival counts (ids of a request sent again stay new),
        OTP codes, schedules and campaigns, the webhook registration (not the
        pushes under way), credits, and in the header the
        seed, the time zone and the report-shaping faults. Request-level
        faults are not saved. Returns the ``changes()`` value saved.
        """
        with self._save_lock:
            with self._lock:
                saved = (self._revision, self.credits)
                ledger, count = self._ledger, len(self._ledger.requests)
                now_ms = epoch_ms(self.now())
                arrivals = list(self._arrivals.items())
                otp = [{"kind": "otp", "mobile": mobile, "code": c.code, "expires_ms": c.expires_ms,
                        "created_ms": c.created_ms, "used": c.used} for mobile, c in self._otp.items()]
                schedules = [_schedule_record(sched) for sched in self._schedules.values()]
                campaigns = [{"kind": "campaign", "campaign_id": campaign, "transaction_ids": list(txns)}
                             for campaign, txns in self._campaigns.items()]
                webhook = [] if self.webhook is None else [{"kind": "webhook", **self.webhook._asdict()}]
            header = statefile.Header(seed=self.seed, timezone=self.timezone.key, saved_at_ms=now_ms,
                                      credits=saved[1], report_faults=self.report_faults())
            statefile.write(Path(path), header,
                            _saved_records(ledger, count, arrivals, [*otp, *schedules, *campaigns, *webhook]))
        return saved

    def restore(self, path: Path | str) -> statefile.Header:
        """Replace all traffic (and credits) with what the file at ``path`` holds.

        Its seed and time zone must be this state's (``StateFileError``
        otherwise, as for a file this simulator cannot read); nothing changes
        unless the whole file reads. Faults stay as they are: the caller
        decides about the header's ``report_faults``. With a webhook saved and
        a push dispatcher attached, receipts that fall due after the save are
        queued again (pushes that were under way at the save are lost).
        """
        path = Path(path)
        header, records = statefile.read(path)
        if header.seed != self.seed:
            raise statefile.StateFileError(f"simulator state {path} was saved with seed {header.seed}, not {self.seed}")
        if header.timezone != self.timezone.key:
            raise statefile.StateFileError(
                f"simulator state {path} was saved in time zone {header.timezone}, not {self.timezone.key}")
        ledger = _Ledger()
        arrivals: dict[str, int] = {}
        otp: dict[str, _OtpCode] = {}
        schedules: dict[str, _Schedule] = {}
        campaigns: dict[str, list[str]] = {}
        webhook: Webhook | None = None
        for number, record in records:
            kind = record.get("kind")
            try:
                if kind == "request":
                    _restore_request(ledger, self.timezone, record)
                elif kind == "arrivals":
                    arrivals.update((_text(fp), _count(n)) for fp, n in record["counts"].items())
                elif kind == "otp":
                    otp[_text(record["mobile"])] = _OtpCode(_text(record["code"]), _count(record["expires_ms"]),
                                                            _count(record["created_ms"]), _flag(record["used"]))
                elif kind == "schedule":
                    sched = _restore_schedule(record)
                    schedules[sched.transaction_id] = sched
                elif kind == "campaign":
                    campaigns[_text(record["campaign_id"])] = [_text(t) for t in record["transaction_ids"]]
                elif kind == "webhook":
                    webhook = Webhook(*_checked_webhook(_text(record["url"]), str(_count(record["rate"]))),
                                      _count(record["registered_ms"]))
                else:
                    raise ValueError(kind)
            except (KeyError, TypeError, ValueError, OverflowError, AttributeError, IndexError, ProviderError):
                raise statefile.malformed(path, number, kind) from None
        with self._lock:
            self._ledger, self._arrivals, self._otp = ledger, arrivals, otp
            self._schedules, self._campaigns = schedules, campaigns
            self.credits = header.credits
            self.webhook = webhook
            self._revision += 1
            if self._push_sink is not None:
                self._push_sink.cleared()
                if webhook is not None:
                    self._requeue_pushes(webhook, header.saved_at_ms)
        return header

    def _requeue_pushes(self, webhook: Webhook, saved_at_ms: int) -> None:
        """Queue the receipts of messages billed since the registration that fall due after ``saved_at_ms``."""
        assert self._push_sink is not None
        ledger = self._ledger
        for index, req in enumerate(ledger.requests):
            if req.submitted_ms >= webhook.registered_ms:
                self._push_sink.billed(ledger, index, (), None, due_after_ms=saved_at_ms)

    @classmethod
    def load(cls, path: Path | str, *, clock: Clock, **options: Any) -> SimulatorState:
        """A state with the seed and time zone of the file at ``path``, holding its traffic.

        ``options`` go to the constructor (credentials, faults, ...); the
        file's report-shaping faults apply where ``faults`` is not given.
        """
        header = statefile.read_header(Path(path))
        options.setdefault("faults", FaultConfig(header.report_faults))
        state = cls(clock=clock, seed=header.seed, timezone=header.timezone, **options)
        state.restore(path)
        return state


# ----- state file records --------------------------------------------------

_ARRIVALS_PER_LINE = 10_000


def _saved_records(ledger: _Ledger, count: int, arrivals: list[tuple[str, int]],
                   others: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The lines after the header: billed requests in billing order, then the rest."""
    msg_ids, mobiles, final, intermediate = ledger.msg_ids, ledger.mobiles, ledger.final, ledger.intermediate
    intermediate_ms, final_ms, noise = ledger.intermediate_ms, ledger.final_ms, ledger.noise
    for req in ledger.requests[:count]:
        yield {
            "kind": "request", "transaction_id": req.transaction_id, "campaign_id": req.campaign_id,
            "sender": req.sender, "msg_type": req.msg_type, "text": req.text, "units": req.units,
            "submitted_ms": req.submitted_ms, "fingerprint": req.fingerprint,
            # msgId, mobile, final, intermediate, intermediate_ms, final_ms, noise (generation.Timeline)
            "rows": [[msg_ids[r], mobiles[r], final[r], intermediate[r], intermediate_ms[r], final_ms[r], noise[r]]
                     for r in range(req.first_row, req.first_row + req.count)],
        }
    for start in range(0, len(arrivals), _ARRIVALS_PER_LINE):
        yield {"kind": "arrivals", "counts": dict(arrivals[start:start + _ARRIVALS_PER_LINE])}
    yield from others


def _schedule_record(sched: _Schedule) -> dict[str, Any]:
    request = sched.request
    return {
        "kind": "schedule", "transaction_id": sched.transaction_id, "campaign_id": sched.campaign_id,
        "sender": request.sender, "msg_type": request.msg_type, "text": request.text,
        "duplicate_check": request.duplicate_check, "test_message": request.test_message,
        "schedule_ms": None if request.schedule_time is None else epoch_ms(request.schedule_time),
        "recipients": list(sched.recipients), "fingerprint": sched.fingerprint, "arrival": sched.arrival,
        "part": sched.part, "created_ms": sched.created_ms, "due_ms": sched.due_ms,
        "updated_ms": sched.updated_ms, "state": sched.state, "drops_at_ms": sched.drops_at_ms,
        "late_ms": sched.late_ms,
    }


def _restore_request(ledger: _Ledger, tz: ZoneInfo, record: dict[str, Any]) -> None:
    first_row = len(ledger.msg_ids)
    rows = record["rows"]
    if not isinstance(rows, list) or not rows:
        raise ValueError("a billed request has recipients")
    for msg_id, mobile, final, intermediate, intermediate_ms, final_ms, noise in rows:
        if not (0 <= final < len(generation.STATUSES) and 0 <= intermediate < len(generation.STATUSES)):
            raise ValueError("unknown outcome code")
        ledger.msg_ids.append(_text(msg_id))
        ledger.mobiles.append(_text(mobile))
        ledger.final.append(final)
        ledger.intermediate.append(intermediate)
        ledger.intermediate_ms.append(intermediate_ms)
        ledger.final_ms.append(final_ms)
        ledger.noise.append(noise)
    campaign = record["campaign_id"]
    _index_request(ledger, tz, _text(record["transaction_id"]), None if campaign is None else _text(campaign),
                   _text(record["sender"]), _text(record["msg_type"]), _text(record["text"]),
                   _count(record["units"]), _count(record["submitted_ms"]), _text(record["fingerprint"]), first_row)


def _restore_schedule(record: dict[str, Any]) -> _Schedule:
    recipients = tuple(_text(m) for m in record["recipients"])
    schedule_ms = record["schedule_ms"]
    updated_ms = record["updated_ms"]
    drops_at_ms = record.get("drops_at_ms")  # absent in a state file written before the fault existed
    late_ms = record.get("late_ms", 0)  # likewise
    state = record["state"]
    if state not in ("scheduled", "completed", "cancelled", "failed", "dropped"):
        raise ValueError("unknown schedule state")
    request = SendRequest(_text(record["sender"]), _text(record["msg_type"]), _text(record["text"]), recipients,
                          _flag(record["duplicate_check"]),
                          None if schedule_ms is None else from_epoch_ms(_count(schedule_ms)),
                          _flag(record["test_message"]))
    return _Schedule(request=request, recipients=recipients, fingerprint=_text(record["fingerprint"]),
                     arrival=_count(record["arrival"]), part=_count(record["part"]),
                     transaction_id=_text(record["transaction_id"]), campaign_id=_text(record["campaign_id"]),
                     created_ms=_count(record["created_ms"]), due_ms=_count(record["due_ms"]),
                     updated_ms=None if updated_ms is None else _count(updated_ms), state=state,
                     drops_at_ms=None if drops_at_ms is None else _count(drops_at_ms), late_ms=_count(late_ms))


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError("expected a non-negative integer")
    return value


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError("expected true or false")
    return value
