"""The send worker's Prometheus metrics (docs/design.md#metrics).

The loop counts here where it already counts for its summary: once per
claim, per request and per upkeep sweep, with ``inc(n)`` for the rows, never
once per row. The metrics live in a registry of the worker's own (several
workers in one process, as in the tests, never add up), which ``sms-pipeline
worker`` serves on ``SMS_PIPELINE_METRICS_PORT``. Every label value comes
from a fixed tuple below or from the worker's queues (channel, class): never
a tenant, a sender, a number or an id.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from sms_pipeline.provider.results import SendAccepted, SendAmbiguous, SendNeverConnected, SendOutcome, SendRefused
from sms_pipeline.send.batching import SendBatch
from sms_pipeline.send.breaker import BreakerState, CircuitBreaker
from sms_pipeline.send.outcomes import AppliedOutcome
from sms_pipeline.send.upkeep import UpkeepCounts

# What the provider answered a request.
ANSWERS = ("accepted", "refused", "rate_limited", "ambiguous", "never_connected")
# What became of the rows of a request: its answer's moves (scheduled: a provider-side campaign's, held
# by the provider until its time), then the two ways a row never goes out.
ROW_OUTCOMES = ("submitted", "scheduled", "rejected", "unknown", "released", "expired_unsent", "released_unsent")
# What the upkeep sweep moved: a lease ran out before / after the request started, a pending row expired;
# and a scheduled row whose time came (submitted then).
UPKEEP_OUTCOMES = ("lease_released", "lease_unknown", "pending_expired", "scheduled_submitted")
# Why the worker stopped sending for a while.
BACKOFF_REASONS = ("rate_limited", "breaker_open")
BREAKER_STATES = tuple(state.value for state in BreakerState)
# A request takes tens of milliseconds to the provider's read time-out (30 s by default).
LATENCY_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def answer_of(outcome: SendOutcome) -> str:
    match outcome:
        case SendAccepted():
            return "accepted"
        case SendRefused() if outcome.is_rate_limited:
            return "rate_limited"
        case SendRefused():
            return "refused"
        case SendAmbiguous():
            return "ambiguous"
        case SendNeverConnected():
            return "never_connected"
    raise TypeError(f"not a send outcome: {type(outcome).__name__}")


class WorkerMetrics:
    """The counters of one worker, and its breaker's state read at scrape time."""

    def __init__(self, queues: Iterable[tuple[str, str]], breaker: CircuitBreaker) -> None:
        self.registry = CollectorRegistry()
        queue_labels = ("channel", "class")
        self._claims = Counter("sms_pipeline_worker_claims", "Claims that took rows", queue_labels,
                               registry=self.registry)
        self._claimed_rows = Counter("sms_pipeline_worker_claimed_rows", "Rows claimed", queue_labels,
                                     registry=self.registry)
        self._requests = Histogram("sms_pipeline_worker_request_seconds",
                                   "Provider requests by answer, and how long each took",
                                   (*queue_labels, "answer"), buckets=LATENCY_BUCKETS, registry=self.registry)
        self._rows = Counter("sms_pipeline_worker_rows", "Rows of requests by what became of them",
                             (*queue_labels, "outcome"), registry=self.registry)
        self._unpriced = Counter("sms_pipeline_worker_unpriced_rows",
                                 "Submitted rows without a rate-card price (billed, cost unknown)", queue_labels,
                                 registry=self.registry)
        self._upkeep = Counter("sms_pipeline_worker_upkeep_rows", "Rows the worker's upkeep sweep moved",
                               ("outcome",), registry=self.registry)
        self._backoffs = Counter("sms_pipeline_worker_backoffs", "Pauses in sending (rate limit, breaker opened)",
                                 ("reason",), registry=self.registry)
        self._backoff_seconds = Counter("sms_pipeline_worker_backoff_seconds",
                                        "Seconds of the pauses in sending", ("reason",), registry=self.registry)
        breaker_state = Gauge("sms_pipeline_worker_breaker_state", "1 for the circuit breaker's current state",
                              ("state",), registry=self.registry)
        for state in BreakerState:
            breaker_state.labels(state.value).set_function(lambda state=state: float(breaker.state is state))
        # Every series from the start at 0, so a rate over the first increase is right.
        for channel, message_class in queues:
            self._claims.labels(channel, message_class)
            self._claimed_rows.labels(channel, message_class)
            self._unpriced.labels(channel, message_class)
            for outcome in ROW_OUTCOMES:
                self._rows.labels(channel, message_class, outcome)
        for outcome in UPKEEP_OUTCOMES:
            self._upkeep.labels(outcome)
        for reason in BACKOFF_REASONS:
            self._backoffs.labels(reason)
            self._backoff_seconds.labels(reason)

    def claimed(self, channel: str, message_class: str, rows: int) -> None:
        self._claims.labels(channel, message_class).inc()
        self._claimed_rows.labels(channel, message_class).inc(rows)

    def request(self, batch: SendBatch, outcome: SendOutcome, seconds: float, applied: AppliedOutcome) -> None:
        self._requests.labels(batch.channel, batch.message_class, answer_of(outcome)).observe(seconds)
        for name in ("submitted", "scheduled", "rejected", "unknown", "released"):
            self.rows(batch, name, getattr(applied, name))
        if applied.unpriced:
            self._unpriced.labels(batch.channel, batch.message_class).inc(applied.unpriced)

    def rows(self, batch: SendBatch, outcome: str, count: int) -> None:
        if count:
            self._rows.labels(batch.channel, batch.message_class, outcome).inc(count)

    def upkeep(self, counts: UpkeepCounts) -> None:
        for outcome, count in (("lease_released", counts.claims_released), ("lease_unknown", counts.claims_expired),
                               ("pending_expired", counts.pending_expired)):
            if count:
                self._upkeep.labels(outcome).inc(count)

    def promoted(self, rows: int) -> None:
        self._upkeep.labels("scheduled_submitted").inc(rows)

    def backoff(self, reason: str, seconds: float) -> None:
        self._backoffs.labels(reason).inc()
        self._backoff_seconds.labels(reason).inc(seconds)
