"""The worker process: claim -> start -> send -> write the outcome, in a loop.

Each cycle claims the rows of one request of one channel/class queue (a
short committed transaction: the queue's :class:`SendStrategy` plans the
next due rows and only its first request's rows are claimed; the others stay
``pending`` for any worker), moves them ``claimed -> sending`` in one
committed statement just before the request goes out, makes the request
with no transaction open, and writes its outcome onto the rows still
``sending``. A row whose ``expires_at`` passed after the claim is expired
instead, never sent. OTP queues are claimed first, and only when an OTP
strategy is registered: without one, ``message_class = 'otp'`` rows are
never claimed. A queue whose strategy carries a campaign strategy
(``BulkSmsStrategy.campaigns``) first hands over the rows of provider-side
campaigns whose time is still ahead, and the loop promotes, once a poll
interval, the ``scheduled`` rows whose time has come
(:mod:`sms_pipeline.send.campaigns`).

Stopping (SIGTERM/SIGINT, a configuration refusal, another thread's crash):
the request in flight finishes and its outcome is written; claimed rows
whose request was not started are released to ``pending``. A
configuration refusal (codes 216/213/147/301, or a refusal we cannot
classify) ends :meth:`Worker.run` with :class:`ProviderRefusedConfiguration`,
one line saying what to fix. A rate limit releases and backs off (shared by
all threads: the limit is the account's). Repeated failures open the
circuit breaker: no claims until it cools down (with ``once``, the run ends).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.core.states import MessageClass
from sms_pipeline.errors import UserError
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import SendOutcome, SendRefused
from sms_pipeline.send import upkeep
from sms_pipeline.send.batching import SendBatch, plan_requests
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.claim import ClaimedMessage, claim
from sms_pipeline.send.metrics import WorkerMetrics
from sms_pipeline.send.outcomes import AppliedOutcome, apply_outcome, release_unsent, start_request

if TYPE_CHECKING:  # campaigns builds on this module
    from sms_pipeline.send.campaigns import CampaignStrategy

log = logging.getLogger(__name__)

QueueKey = tuple[str, str]  # (channel, message_class)
# Claim order: a late one-time code is useless, promotions can wait.
CLASS_PRIORITY = (MessageClass.otp, MessageClass.transactional, MessageClass.promotional)


class ProviderRefusedConfiguration(UserError):
    """The provider refused our credentials, request or account (or gave a code nobody classified).

    Nothing was sent; the rows went back to ``pending``. Fix, then restart.
    """


def _refusal_line(refusal: SendRefused) -> str:
    if refusal.is_configuration_error:
        fix = ("check SMS_PROVIDER_USERID, SMS_PROVIDER_PASSWORD / SMS_PROVIDER_API_KEY, "
               "SMS_PROVIDER_BASE_URL and the account's credit")
    else:
        fix = "this worker cannot classify that code; find out what it means before restarting"
    return (f"the provider refused a send with code {refusal.code} ({refusal.reason}): {fix}; "
            "its messages are back in pending and the worker stopped")


@dataclass(frozen=True, slots=True)
class Sent:
    """A request that was made, with its answer. Strategies may subclass it to carry more."""

    batch: SendBatch
    outcome: SendOutcome


class SendStrategy(Protocol):
    """How one queue's rows go out: grouping, the provider call, and the write-back."""

    # Most due rows one claim of this queue looks at to plan its next request
    # (None: the worker's batch size); only that request's rows are claimed.
    claim_limit: int | None

    def plan(self, messages: Sequence[ClaimedMessage], batch_size: int) -> list[SendBatch]:
        """Group due rows into requests (pure), the request of the oldest row first.

        The worker claims only the first request's rows, so a plan should put
        first the request it wants sent next.
        """
        ...

    def send(self, batch: SendBatch) -> Sent:
        """Make the request. No database access here: nothing may be held open across it."""
        ...

    def record(self, conn: psycopg.Connection, sent: Sent, *, now: datetime) -> AppliedOutcome:
        """Write the answer onto the rows still ``sending``, in one transaction."""
        ...


def send_quick(client: ProviderClient, batch: SendBatch, *, schedule_time: datetime | None = None) -> SendOutcome:
    """One quick ``/send`` of ``batch`` (``schedule_time``: the provider holds it until then)."""
    return client.send(batch.recipients, batch.body, batch.sender_id or "", batch.msg_type,
                       dlt_entity_id=batch.dlt_entity_id, dlt_template_id=batch.dlt_template_id,
                       schedule_time=schedule_time)


@dataclass(frozen=True)
class BulkSmsStrategy:
    """Transactional and promotional SMS: many numbers per ``/send`` request."""

    client: ProviderClient
    price_time_zone: str  # the zone the rate card's days are read in
    claim_limit: int | None = None
    # Hands this queue's provider-side campaigns to the provider ahead of their time; None: they wait until
    # due and go out as any row.
    campaigns: CampaignStrategy | None = None

    def plan(self, messages: Sequence[ClaimedMessage], batch_size: int) -> list[SendBatch]:
        return plan_requests(messages, batch_size)

    def send(self, batch: SendBatch) -> Sent:
        return Sent(batch, send_quick(self.client, batch))

    def record(self, conn: psycopg.Connection, sent: Sent, *, now: datetime) -> AppliedOutcome:
        return apply_outcome(conn, sent.batch, sent.outcome, now=now, price_time_zone=self.price_time_zone)


def bulk_strategies(client: ProviderClient, price_time_zone: str) -> dict[QueueKey, SendStrategy]:
    """The strategies this package provides: SMS, transactional and promotional."""
    bulk = BulkSmsStrategy(client, price_time_zone)
    return {("sms", MessageClass.transactional.value): bulk, ("sms", MessageClass.promotional.value): bulk}


def select_queues(strategies: Mapping[QueueKey, SendStrategy], channels: Iterable[str] | None = None,
                  classes: Iterable[str] | None = None) -> dict[QueueKey, SendStrategy]:
    """The registered queues matching the filters, OTP first; a filter nothing serves is an error."""
    wanted_channels = set(channels) if channels else None
    wanted_classes = set(classes) if classes else None
    chosen = {key: s for key, s in strategies.items()
              if (wanted_channels is None or key[0] in wanted_channels)
              and (wanted_classes is None or key[1] in wanted_classes)}
    for name, wanted, position in (("channel", wanted_channels, 0), ("class", wanted_classes, 1)):
        for value in sorted(wanted or ()):
            if not any(key[position] == value for key in chosen):
                served = ", ".join(sorted({f"{c}/{k}" for c, k in strategies}))
                raise UserError(f"no send strategy for {name} {value!r} (this worker sends: {served})")
    order = {cls.value: i for i, cls in enumerate(CLASS_PRIORITY)}
    return dict(sorted(chosen.items(), key=lambda item: (order.get(item[0][1], len(order)), item[0][0])))


@dataclass
class WorkerSummary:
    claimed: int = 0
    requests: int = 0
    submitted: int = 0
    scheduled: int = 0  # provider-side campaign rows the provider took, to send at their time
    promoted: int = 0  # scheduled -> submitted: their time came
    rejected: int = 0
    unknown: int = 0
    released: int = 0
    unpriced: int = 0
    claims_expired: int = 0  # upkeep: sending -> unknown (lease ran out in flight)
    claims_released: int = 0  # upkeep: claimed -> pending (lease ran out before the request started)
    pending_expired: int = 0
    expired_unsent: int = 0  # claimed -> expired: expires_at passed before the request started
    stopped_by: str | None = None  # signal | configuration | breaker_open | rate_limited | error

    def add(self, **counts: int) -> None:
        for name, value in counts.items():
            setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class _Backoff:
    """The account-wide rate-limit pause, shared by all threads."""

    initial_s: float
    max_s: float
    _until: float = 0.0
    _current: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def hit(self) -> float:
        with self._lock:
            self._current = min(self.max_s, self._current * 2) if self._current else self.initial_s
            self._until = time.monotonic() + self._current
            return self._current

    def clear(self) -> None:
        with self._lock:
            self._current = 0.0

    def remaining(self) -> float:
        with self._lock:
            return max(0.0, self._until - time.monotonic())


class Worker:
    """Claims and sends until stopped (or, with ``once``, until nothing is due)."""

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection],
        strategies: Mapping[QueueKey, SendStrategy],
        *,
        clock: Clock,
        batch_size: int,
        lease: timedelta,
        breaker: CircuitBreaker,
        concurrency: int = 1,
        poll_interval_s: float = 1.0,
        upkeep_interval_s: float = 30.0,
        backoff_initial_s: float = 1.0,
        backoff_max_s: float = 60.0,
        max_rate_limited_in_once: int = 8,
    ) -> None:
        if batch_size < 1 or concurrency < 1:
            raise ValueError("batch size and concurrency must be at least 1")
        if not strategies:
            raise ValueError("a worker needs at least one send strategy")
        self._connect = connect
        self._queues = select_queues(strategies)
        # The queues that hand provider-side campaigns over early (other strategies, OTP's, have none).
        self._campaigns: dict[QueueKey, CampaignStrategy] = {
            key: campaigns for key, s in self._queues.items()
            if (campaigns := getattr(s, "campaigns", None)) is not None}
        self.metrics = WorkerMetrics(self._queues, breaker)
        self._clock = clock
        self._batch_size = batch_size
        self._lease = lease
        self._breaker = breaker
        self._concurrency = concurrency
        self._poll_interval_s = poll_interval_s
        self._upkeep_interval_s = upkeep_interval_s
        self._backoff = _Backoff(backoff_initial_s, backoff_max_s)
        self._max_rate_limited_in_once = max_rate_limited_in_once
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._summary = WorkerSummary()
        self._refusal: SendRefused | None = None
        self._crash: BaseException | None = None
        self._next_upkeep = 0.0
        # The campaign steps cost a statement even when they find nothing: promotion runs at most once a
        # poll interval, and a campaign claim that found nothing waits one (shared by the threads; the
        # first of each always runs, so every `once` run does both).
        self._next_promotion = 0.0
        self._campaigns_idle_until: dict[QueueKey, float] = {}
        self._rate_limited_in_a_row = 0

    # ----- control ------------------------------------------------------------

    def stop(self, why: str = "signal") -> None:
        """Ask every thread to finish its request in flight and stop."""
        with self._lock:
            if self._summary.stopped_by is None:
                self._summary.stopped_by = why
        self._stop.set()

    def run(self, *, once: bool = False) -> WorkerSummary:
        """Run ``concurrency`` loops (threads beyond the first) and return what they did."""
        log.info("worker start queues=%s batch_size=%d concurrency=%d once=%s",
                 ",".join(f"{c}/{k}" for c, k in self._queues), self._batch_size, self._concurrency, once)
        threads = [threading.Thread(target=self._thread_main, args=(once,), name=f"sms-worker-{n}", daemon=True)
                   for n in range(1, self._concurrency)]
        for thread in threads:
            thread.start()
        self._thread_main(once)
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.2)  # short joins keep the main thread responsive to signals
        summary = self._summary
        log.info("worker end %s", " ".join(f"{k}={v}" for k, v in summary.as_dict().items()))
        if self._crash is not None:
            raise self._crash
        if self._refusal is not None:
            raise ProviderRefusedConfiguration(_refusal_line(self._refusal))
        return summary

    # ----- one thread ------------------------------------------------------------

    def _thread_main(self, once: bool) -> None:
        try:
            with self._connect() as conn:
                self._loop(conn, once)
        except BaseException as exc:  # noqa: BLE001 - handed to run(), which re-raises it
            log.exception("worker thread failed; stopping the others")
            with self._lock:
                if self._crash is None:
                    self._crash = exc
            self.stop("error")

    def _loop(self, conn: psycopg.Connection, once: bool) -> None:
        while not self._stop.is_set():
            self._maybe_upkeep(conn)
            self._promote(conn)
            pause = self._backoff.remaining()
            if pause:
                self._stop.wait(pause)
                continue
            if not self._breaker.allow():
                if once:
                    log.warning("circuit breaker open: ending this run")
                    self.stop("breaker_open")
                    return
                self._stop.wait(self._breaker.seconds_until_retry())
                continue
            if not self._claim_and_send(conn, once):
                if once:
                    return
                self._stop.wait(self._poll_interval_s)

    def _maybe_upkeep(self, conn: psycopg.Connection) -> None:
        with self._lock:
            due = time.monotonic() >= self._next_upkeep
            if due:
                self._next_upkeep = time.monotonic() + self._upkeep_interval_s
        if due:
            counts = upkeep.run_upkeep(conn, now=self._clock.now(), lease=self._lease)
            self.metrics.upkeep(counts)
            with self._lock:
                self._summary.add(claims_expired=counts.claims_expired, claims_released=counts.claims_released,
                                  pending_expired=counts.pending_expired)

    def _promote(self, conn: psycopg.Connection) -> None:
        """Provider-side campaign rows whose time has come: ``scheduled -> submitted``, billed then."""
        if not self._campaigns:  # a worker that hands none over leaves them to one that does, and to reconcile
            return
        with self._lock:
            if time.monotonic() < self._next_promotion:
                return
            self._next_promotion = time.monotonic() + self._poll_interval_s
        promoted, _gone_unknown = next(iter(self._campaigns.values())).settle_due(conn, self._clock.now())
        if promoted.submitted:
            self.metrics.promoted(promoted.submitted)
            with self._lock:
                self._summary.add(promoted=promoted.submitted, unpriced=promoted.unpriced)

    def _claim_and_send(self, conn: psycopg.Connection, once: bool) -> bool:
        """One claim from the first queue with rows to send; False when every queue is empty.

        A queue's provider-side campaigns whose time is still ahead come before
        its due rows: they are handed over at the first claim, not at their time.
        """
        for (channel, message_class), strategy in self._queues.items():
            campaigns = self._campaigns.get((channel, message_class))
            if campaigns is not None:
                with self._lock:
                    idle = time.monotonic() < self._campaigns_idle_until.get((channel, message_class), 0.0)
                if not idle:
                    if self._claim_one(conn, channel, message_class, campaigns, campaigns.query,
                                       campaigns.claim_limit, campaigns.claim_limit, once):
                        return True
                    with self._lock:
                        self._campaigns_idle_until[(channel, message_class)] = \
                            time.monotonic() + self._poll_interval_s
            size = self._batch_size
            if self._claim_one(conn, channel, message_class, strategy, "claim_candidates",
                               min(size, strategy.claim_limit or size), size, once):
                return True
        return False

    def _claim_one(self, conn: psycopg.Connection, channel: str, message_class: str, strategy: SendStrategy,
                   query: str, limit: int, request_size: int, once: bool) -> bool:
        """One claim of ``query``'s rows, and their request sent; False when it found none."""
        planned: list[SendBatch] = []

        def next_request(due: Sequence[ClaimedMessage]) -> Sequence[ClaimedMessage]:
            # A claim takes only what this worker sends next: the first request of the plan.
            planned[:] = strategy.plan(due, request_size)[:1]
            return planned[0].messages if planned else ()

        rows = claim(conn, channel=channel, message_class=message_class, now=self._clock.now(), limit=limit,
                     take=next_request, query=query)
        if not rows:
            return False
        log.info("claimed channel=%s class=%s rows=%d", channel, message_class, len(rows))
        self.metrics.claimed(channel, message_class, len(rows))
        with self._lock:
            self._summary.add(claimed=len(rows))
        self._send_all(conn, strategy, planned, once)
        return True

    def _send_all(self, conn: psycopg.Connection, strategy: SendStrategy, batches: list[SendBatch],
                  once: bool) -> None:
        for index, batch in enumerate(batches):
            if self._stop.is_set() or not self._breaker.allow() or self._backoff.remaining():
                for unsent in batches[index:]:
                    released = release_unsent(conn, unsent, now=self._clock.now(), reason="released_unsent")
                    self.metrics.rows(unsent, "released_unsent", released)
                    with self._lock:
                        self._summary.add(released=released)
                return
            # The durable "request started" step, committed before the request:
            # a crash from here on leaves `sending` (the lease makes it
            # `unknown`), never a `claimed` row that may have gone out.
            started = start_request(conn, batch, now=self._clock.now())
            if started.expired:
                self.metrics.rows(batch, "expired_unsent", started.expired)
                with self._lock:
                    self._summary.add(expired_unsent=started.expired)
            if len(started.sending) < len(batch):
                if not started.sending:
                    continue
                batch = replace(batch, messages=tuple(m for m in batch.messages if m.id in started.sending))
            request_started = time.perf_counter()
            sent = strategy.send(batch)  # no transaction is open here
            request_s = time.perf_counter() - request_started
            applied = strategy.record(conn, sent, now=self._clock.now())
            self.metrics.request(batch, sent.outcome, request_s, applied)
            self._react(sent, applied, once)

    def _react(self, sent: Sent, applied: AppliedOutcome, once: bool) -> None:
        decision = applied.decision
        with self._lock:
            self._summary.add(requests=1, submitted=applied.submitted, scheduled=applied.scheduled,
                              rejected=applied.rejected, unknown=applied.unknown, released=applied.released,
                              unpriced=applied.unpriced)
        if decision.breaker_failure:
            if self._breaker.record_failure():
                self.metrics.backoff("breaker_open", self._breaker.seconds_until_retry())
        else:
            self._breaker.record_success()
        if decision.back_off:
            pause = self._backoff.hit()
            log.warning("rate limited: backing off %.1fs", pause)
            self.metrics.backoff("rate_limited", pause)
            with self._lock:
                self._rate_limited_in_a_row += 1
                give_up = once and self._rate_limited_in_a_row >= self._max_rate_limited_in_once
            if give_up:
                self.stop("rate_limited")
        elif not decision.breaker_failure:
            self._backoff.clear()
            with self._lock:
                self._rate_limited_in_a_row = 0
        if decision.stop_worker:
            assert isinstance(sent.outcome, SendRefused)
            with self._lock:
                self._refusal = self._refusal or sent.outcome
            log.error("provider refused our configuration code=%s: stopping", sent.outcome.code)
            self.stop("configuration")
