"""The provider's delivery-receipt push: one form POST per final receipt to the registered webhook.

From the moment a webhook is registered, every billed message with a final
outcome is queued here at billing, keyed by the time of its final receipt
(a heap of packed integers: no rescan of the ledger, a few dozen bytes a
message). A background thread sends what the simulator's clock (real or
virtual) has passed, oldest first, at most the registered number per second
of real time. Intermediate statuses and messages that never get a final
receipt are never pushed.

A push is acknowledged by any 2xx. Anything else (another status, a
time-out, a refused connection) is tried again after 30 s, 1 min, 2 min, ...
(at most 1 h) of the simulator's clock, until 24 h of it have passed since
the first attempt; then the receipt is dropped and counted.

Faults, decided per msgId from the seed: ``push_duplicate`` (sent again
once acknowledged), ``push_reorder`` (held back until a later receipt has
gone out, at most ``REORDER_HOLD_S``), ``push_early`` (decided at billing in
state.py: the receipt is final at once and its push goes out before the
send's answer), ``push_unmapped_code`` (a code missing from the code table).
The push's code is the one the reports show for the message
(``generation.shown_final``), so the code table maps it to the report's word.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import httpx

from sms_pipeline.core.provider_time import format_local
from sms_pipeline.simulator import faults, generation
from sms_pipeline.simulator.state import SimulatorState, _Ledger, epoch_ms, from_epoch_ms

# The contract's default parameter names; the provider's portal lets a customer rename each one.
FIELDS = ("txn_id", "msg_id", "mobile", "error_code", "received_time", "delivered_time")
UNMAPPED_CODE = "099"  # what push_unmapped_code sends; never in the code table
DEFAULT_TIMEOUT_S = 10.0
FIRST_RETRY_MS = 30_000
MAX_RETRY_MS = 3_600_000
GIVE_UP_MS = 24 * 3_600_000
REORDER_HOLD_S = 2.0  # a reordered push waits at most this long (real time) for a later one to overtake it
_POLL_S = 0.05  # how often the clock is looked at: a shared virtual clock moves without telling us
_BATCH = 500
_SHIFT = 32  # packed queue key: due_ms << 64 | request index << 32 | row

log = logging.getLogger(__name__)


def delivery_codes() -> list[dict[str, str]]:
    """The code table (``/info/deliverycodes``): every code a push can carry, with its report word."""
    table: dict[str, dict[str, str]] = {}
    for status in (*generation.STATUSES, *generation.UNMAPPED_WORDS):
        if status.final:
            table.setdefault(status.error_code,
                             {"code": status.error_code, "status": status.word, "description": status.cause})
    return sorted(table.values(), key=lambda entry: entry["code"])


class Push(NamedTuple):
    """One final receipt as pushed."""

    msg_id: str
    txn_id: str
    mobile: str
    code: str
    received_ms: int  # when the provider accepted the message (the reports' submit time)
    delivered_ms: int  # the final receipt's time, failures included
    duplicate: bool
    reorder: bool


@dataclass(slots=True)
class _Attempt:
    push: Push
    due_ms: int
    first_ms: int | None = None  # simulator time of the first attempt
    tries: int = 0


class PushDispatcher:
    """Queue and sender of receipt pushes for one :class:`SimulatorState` (its ``PushSink``)."""

    def __init__(self, state: SimulatorState) -> None:
        self._state = state
        self._lock = threading.Lock()  # taken after the state's lock, never before it
        self._ledger: _Ledger | None = None
        self._queue: list[int] = []  # packed keys, see _SHIFT
        self._early: dict[tuple[str, int], list[int]] = {}  # (fingerprint, arrival) of a send -> packed keys
        self._retries: list[tuple[int, int, _Attempt]] = []
        self._held: list[tuple[float, _Attempt]] = []  # (monotonic time held since, attempt): push_reorder
        self._sequence = itertools.count()
        self._generation = 0  # bumped by ``cleared``: attempts of an older one are forgotten
        self._counts: Counter[str] = Counter()
        self._names = {name: name for name in FIELDS}
        self._timeout_s = DEFAULT_TIMEOUT_S
        self._slot_lock = threading.Lock()
        self._next_slot = 0.0  # monotonic time the next push may start
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._http = httpx.Client(follow_redirects=False)
        self._thread = threading.Thread(target=self._run, name="sms-simulator-pushes", daemon=True)
        state.attach_pushes(self)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=15)
        self._http.close()

    # ----- PushSink (called with the state's lock held) -----------------------

    def billed(self, ledger: _Ledger, request_index: int, early_rows: Sequence[int],
               answer_key: tuple[str, int] | None, due_after_ms: int | None = None) -> None:
        req = ledger.requests[request_index]
        early = set(early_rows)
        with self._lock:
            self._ledger = ledger
            for row in range(req.first_row, req.first_row + req.count):
                if ledger.final[row] == generation.NEVER_FINAL:
                    continue
                due_ms = req.submitted_ms + ledger.final_ms[row]
                if due_after_ms is not None and due_ms <= due_after_ms:
                    continue
                packed = (due_ms << 2 * _SHIFT) | (request_index << _SHIFT) | row
                if row in early and answer_key is not None:
                    self._early.setdefault(answer_key, []).append(packed)
                else:
                    heapq.heappush(self._queue, packed)
                self._counts["scheduled"] += 1
        self._wake.set()

    def cleared(self) -> None:
        with self._lock:
            self._ledger = None
            self._queue = []
            self._early.clear()
            self._retries = []
            self._held = []
            self._counts.clear()
            self._generation += 1

    # ----- settings and counters (/_sim/pushes) -------------------------------

    def configure(self, settings: Mapping[str, Any]) -> None:
        """``param_names`` (contract name -> name to send; others keep theirs) and ``timeout_s``."""
        names = settings.get("param_names", {})
        if not isinstance(names, dict) or not set(names) <= set(FIELDS) or not all(
                isinstance(value, str) and value.strip() for value in names.values()):
            raise ValueError(f"param_names maps some of {', '.join(FIELDS)} to non-empty names")
        timeout = settings.get("timeout_s", self._timeout_s)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError("timeout_s must be a positive number of seconds")
        merged = {**self._names, **{key: value.strip() for key, value in names.items()}}
        if len(set(merged.values())) != len(FIELDS):
            raise ValueError("param_names must stay distinct")
        with self._lock:
            self._names, self._timeout_s = merged, float(timeout)

    def snapshot(self) -> dict[str, Any]:
        """Counters: receipts ``scheduled`` (queued since the last reset), ``queued`` (not yet due),
        ``due``, ``acknowledged``, ``retrying``, ``dropped`` (given up after 24 h), ``outstanding`` (due,
        neither acknowledged nor dropped); HTTP ``attempts``, ``failed_attempts``, ``duplicates_sent``;
        ``faults`` fired (since the simulator started); ``caught_up`` (every push the clock has passed was
        attempted, and nothing is on its way); the settings. A reset or a deleted webhook zeroes them."""
        fired = self._state.faults.fired()
        now_ms = epoch_ms(self._state.now())
        with self._lock:
            counts = dict(self._counts)
            queued = len(self._queue) + sum(len(keys) for keys in self._early.values())
            retrying = len(self._retries)
            nothing_due = ((not self._queue or self._queue[0] >> 2 * _SHIFT > now_ms)
                           and (not self._retries or self._retries[0][0] > now_ms))
            names, timeout = dict(self._names), self._timeout_s
        keys = ("scheduled", "due", "acknowledged", "dropped", "attempts", "failed_attempts", "duplicates_sent")
        result: dict[str, Any] = {key: counts.get(key, 0) for key in keys}
        result.update(
            queued=queued, retrying=retrying,
            outstanding=result["due"] - result["acknowledged"] - result["dropped"],
            faults={name: fired[name] for name in faults.PUSH_FAULTS},
            param_names=names, timeout_s=timeout,
        )
        # Nothing the clock has passed waits to be sent, none is on its way: only retries not yet due.
        result["caught_up"] = nothing_due and result["outstanding"] == retrying
        return result

    # ----- sending ---------------------------------------------------------------

    def has_early(self, answer_key: tuple[str, int]) -> bool:
        return answer_key in self._early  # a dict lookup is atomic: no lock on every send

    def deliver_early(self, answer_key: tuple[str, int]) -> None:
        """Push the push_early receipts of one send now, before its answer (the caller's thread)."""
        with self._lock:
            if answer_key not in self._early:
                return
            attempts = [self._resolve(packed) for packed in self._early.pop(answer_key)]
            generation_now = self._generation
        for attempt in attempts:
            self._deliver(attempt, generation_now)

    def _run(self) -> None:
        while not self._stopping.is_set():
            batch, generation_now = self._take_due(epoch_ms(self._state.now()))
            if not batch:
                self._wake.wait(_POLL_S)
                self._wake.clear()
                continue
            for attempt in batch:
                if self._stopping.is_set() or generation_now != self._generation:
                    break
                self._deliver(attempt, generation_now)

    def _fires(self, name: str, msg_id: str) -> bool:
        state = self._state
        fired = faults.fires(state.faults.rate(name), state.seed, name, msg_id)
        if fired:
            state.faults.count(name)
        return fired

    def _resolve(self, packed: int) -> _Attempt:
        """The push of a queued receipt (lock held): its code as the reports show it now."""
        ledger = self._ledger
        assert ledger is not None
        mask = (1 << _SHIFT) - 1
        due_ms, index, row = packed >> 2 * _SHIFT, (packed >> _SHIFT) & mask, packed & mask
        req = ledger.requests[index]
        msg_id = ledger.msg_ids[row]
        status = generation.shown_final(generation.STATUSES[ledger.final[row]], ledger.noise[row],
                                        self._state.faults.rate("unmapped_status"))
        code = UNMAPPED_CODE if self._fires("push_unmapped_code", msg_id) else status.error_code
        self._counts["due"] += 1
        push = Push(msg_id, req.transaction_id, ledger.mobiles[row], code, req.submitted_ms, due_ms,
                    self._fires("push_duplicate", msg_id), self._fires("push_reorder", msg_id))
        return _Attempt(push, due_ms)

    def _take_due(self, now_ms: int) -> tuple[list[_Attempt], int]:
        """What is due, in order of receipt time; reordered pushes behind a later one (or once held too long)."""
        with self._lock:
            fresh = []
            while self._queue and self._queue[0] >> 2 * _SHIFT <= now_ms and len(fresh) < _BATCH:
                fresh.append(self._resolve(heapq.heappop(self._queue)))
            while self._retries and self._retries[0][0] <= now_ms and len(fresh) < 2 * _BATCH:
                fresh.append(heapq.heappop(self._retries)[2])
            on_time = sorted((a for a in fresh if not (a.push.reorder and a.tries == 0)), key=lambda a: a.due_ms)
            late = [a for a in fresh if a.push.reorder and a.tries == 0]
            now = time.monotonic()
            self._held.extend((now, attempt) for attempt in late)
            if on_time:
                batch, self._held = on_time + [attempt for _, attempt in self._held], []
            else:
                batch = [attempt for since, attempt in self._held if now - since >= REORDER_HOLD_S]
                self._held = [(since, attempt) for since, attempt in self._held if now - since < REORDER_HOLD_S]
            return batch, self._generation

    def _wait_for_slot(self, rate: int) -> None:
        """At most ``rate`` push starts per second of real time, across threads."""
        with self._slot_lock:
            now = time.monotonic()
            start = max(self._next_slot, now)
            self._next_slot = start + 1.0 / rate
        if start > now:
            self._stopping.wait(start - now)

    def _deliver(self, attempt: _Attempt, generation_now: int) -> None:
        """One attempt; afterwards acknowledged, queued for a retry, or dropped."""
        webhook = self._state.webhook
        if webhook is None:  # deleted meanwhile (and the queue cleared): nothing more goes out
            return
        self._wait_for_slot(webhook.rate)
        if self._stopping.is_set():
            return
        now_ms = epoch_ms(self._state.now())
        if attempt.first_ms is None:
            attempt.first_ms = now_ms
        attempt.tries += 1
        acknowledged = self._post(webhook.url, attempt.push)
        duplicated = acknowledged and attempt.push.duplicate
        if duplicated:  # the extra copy, never retried
            self._wait_for_slot(webhook.rate)
            self._post(webhook.url, attempt.push)
        with self._lock:
            if generation_now != self._generation:
                return
            self._counts["attempts"] += 1 + duplicated
            self._counts["duplicates_sent"] += duplicated
            if acknowledged:
                self._counts["acknowledged"] += 1
                return
            self._counts["failed_attempts"] += 1
            retry_ms = now_ms + min(FIRST_RETRY_MS << min(attempt.tries - 1, 20), MAX_RETRY_MS)
            if retry_ms - attempt.first_ms > GIVE_UP_MS:
                self._counts["dropped"] += 1
            else:
                attempt.due_ms = retry_ms
                heapq.heappush(self._retries, (retry_ms, next(self._sequence), attempt))

    def _post(self, url: str, push: Push) -> bool:
        """True on a 2xx. Neither the URL (it holds the receiver's secret) nor the fields are logged."""
        tz = self._state.timezone
        with self._lock:
            names, timeout = self._names, self._timeout_s
        fields = {
            names["txn_id"]: push.txn_id,
            names["msg_id"]: push.msg_id,
            names["mobile"]: push.mobile,
            names["error_code"]: push.code,
            names["received_time"]: format_local(from_epoch_ms(push.received_ms), tz),
            names["delivered_time"]: format_local(from_epoch_ms(push.delivered_ms), tz),
        }
        try:
            response = self._http.post(url, data=fields, timeout=timeout)
        except httpx.HTTPError as exc:
            log.debug("receipt push not delivered: %s", type(exc).__name__)
            return False
        if not response.is_success:
            log.debug("receipt push answered HTTP %s", response.status_code)
        return response.is_success
