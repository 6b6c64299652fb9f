"""Fault injection settings of the simulator, and the deterministic draw.

Each fault has a rate in [0, 1]. Whether it fires for one request is decided
by a hash of (seed, fault name, key), where the key is the request's
fingerprint and arrival ordinal (or a msgId for row-level faults): rate 0.0
never fires, rate 1.0 always does, and rates in between give the same run for
the same seed and request sequence, whatever the thread interleaving.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from typing import Any

# Request-level faults, decided per request.
REQUEST_FAULTS: tuple[str, ...] = (
    "accept_then_drop",  # bill, then drop the connection without an answer (proxy)
    "stall",  # bill, then hold the connection silent past the client's time-out (proxy)
    "refuse_connection",  # the proxy stops listening (decided per time slot, see proxy.py)
    "http_5xx",  # HTTP 5xx before anything is accepted: not billed
    "slow",  # answer after slow_delay_s
    "rate_limit_send",  # code 429 on /send and /otp generate
    "rate_limit_report",  # HTTP 429 on report calls
    "corrupt_zip",  # day zip with damaged compressed data
    "truncated_zip",  # day zip cut short
    "error_body_zip",  # HTTP 200 JSON error instead of the day zip
    # How a send's answer writes its numbers (billing unchanged; the client must match them anyway):
    "answer_plus_prefix",  # "+919876543210"
    "answer_leading_zero",  # "09876543210" (the national form; Indian numbers only)
    "answer_spaces",  # "91 98765 43210"
    "answer_omits_recipient",  # per recipient: listed in neither mobile nor invalidMobile
    # Per scheduled request: one of its transactions vanishes silently (never sent, never billed,
    # gone from schedule/read and campaign/read); what the schedule cross-check must catch.
    "drop_scheduled_transaction",
)
# Row-level faults, decided per message (msgId).
ROW_FAULTS: tuple[str, ...] = (
    "duplicate_rows",  # the row appears twice in its day file
    "neighbour_day",  # the row is filed in the neighbouring day's file
    "unmapped_status",  # a final status shown as BLACKLST / NCPR / lower case / trailing spaces
)
# Receipt-push faults, decided per message (msgId); see pushes.py.
PUSH_FAULTS: tuple[str, ...] = (
    "push_duplicate",  # the push is sent a second time once acknowledged
    "push_reorder",  # the push is held back until a later receipt has gone out
    "push_early",  # the final receipt comes at once and is pushed before the send's answer
    "push_unmapped_code",  # the push carries a code missing from /info/deliverycodes
)
FAULT_NAMES: tuple[str, ...] = REQUEST_FAULTS + ROW_FAULTS + PUSH_FAULTS

# Parameters that are not rates.
PARAMETERS: dict[str, type] = {
    "summary_units_offset": int,  # units the summary disagrees with the ledger by
    "slow_delay_s": float,  # how late a "slow" answer comes
    "stall_s": float,  # how long a stalled connection is held at most
    # Seconds (of the simulator's clock) after its scheduleTime a scheduled transaction accepted while set
    # is sent: a throttled provider working through a large campaign. 0: sent exactly at its time.
    "late_scheduled_send_s": int,
}
_DEFAULT_PARAMETERS: dict[str, Any] = {"summary_units_offset": 0, "slow_delay_s": 0.5, "stall_s": 30.0,
                                       "late_scheduled_send_s": 0}


class FaultSpecError(ValueError):
    """A fault name or value the simulator does not know."""


def draw(seed: int, name: str, *key: object) -> float:
    """A uniform number in [0, 1) fixed by seed, fault name and key."""
    text = "\x1f".join((str(seed), name, *map(str, key)))
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def fires(rate: float, seed: int, name: str, *key: object) -> bool:
    if rate <= 0.0:
        return False
    if rate >= 1.0:
        return True
    return draw(seed, name, *key) < rate


def parse_spec(spec: str) -> tuple[str, float | int]:
    """``"NAME=VALUE"`` (the CLI's ``--fault``) -> (name, value), validated."""
    name, sep, raw = spec.partition("=")
    name = name.strip()
    if not sep:
        raise FaultSpecError(f"expected NAME=VALUE, got {spec!r}")
    return name, _checked_value(name, raw.strip())


def _checked_value(name: str, raw: object) -> float | int:
    if name in PARAMETERS:
        kind = PARAMETERS[name]
        try:
            value = kind(raw)
        except (TypeError, ValueError):
            raise FaultSpecError(f"{name} must be {kind.__name__}, got {raw!r}") from None
        if name != "summary_units_offset" and value < 0:
            raise FaultSpecError(f"{name} must not be negative, got {raw!r}")
        return value
    if name not in FAULT_NAMES:
        known = ", ".join((*FAULT_NAMES, *PARAMETERS))
        raise FaultSpecError(f"unknown fault {name!r} (known: {known})")
    try:
        rate = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise FaultSpecError(f"rate of {name} must be a number in [0, 1], got {raw!r}") from None
    if not 0.0 <= rate <= 1.0:
        raise FaultSpecError(f"rate of {name} must be in [0, 1], got {raw!r}")
    return rate


class FaultConfig:
    """Current fault rates and parameters; thread-safe, observable.

    Observers (the TCP proxy) are called after every change so that a fault
    switched on takes effect before the call that switched it returns.
    """

    def __init__(self, values: Mapping[str, float | int] | None = None) -> None:
        self._lock = threading.Lock()
        self._rates: dict[str, float] = dict.fromkeys(FAULT_NAMES, 0.0)
        self._parameters: dict[str, Any] = dict(_DEFAULT_PARAMETERS)
        self._observers: list[Callable[[], None]] = []
        self._fired: dict[str, int] = dict.fromkeys(FAULT_NAMES, 0)
        if values:
            self.update(values)

    def rate(self, name: str) -> float:
        return self._rates[name]

    def parameter(self, name: str) -> Any:
        return self._parameters[name]

    def update(self, values: Mapping[str, object]) -> None:
        """Set some rates/parameters; all are validated before any is applied."""
        checked = {name: _checked_value(name, value) for name, value in values.items()}
        with self._lock:
            for name, value in checked.items():
                (self._parameters if name in PARAMETERS else self._rates)[name] = value
        for observer in list(self._observers):
            observer()

    def clear(self) -> None:
        self.update({**dict.fromkeys(FAULT_NAMES, 0.0), **_DEFAULT_PARAMETERS})

    def observe(self, callback: Callable[[], None]) -> None:
        self._observers.append(callback)

    def unobserve(self, callback: Callable[[], None]) -> None:
        if callback in self._observers:
            self._observers.remove(callback)

    def count(self, name: str) -> None:
        """Record that ``name`` fired once (tests and the admin endpoint read it)."""
        with self._lock:
            self._fired[name] += 1

    def fired(self) -> dict[str, int]:
        with self._lock:
            return dict(self._fired)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"rates": dict(self._rates), **self._parameters, "fired": dict(self._fired)}
