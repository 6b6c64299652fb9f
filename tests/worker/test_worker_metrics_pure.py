"""The worker's metrics without a run: the breaker's state read at scrape time, and the answer of a request."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from sms_pipeline.provider.results import SendAmbiguous, SendNeverConnected, SendRefused
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.metrics import WorkerMetrics, answer_of
from tests.support.metrics import assert_fixed_labels, samples, value


def test_the_breaker_says_which_failure_opened_it_and_its_state_is_read_at_scrape_time():
    now = [0.0]
    breaker = CircuitBreaker(2, 10.0, now=lambda: now[0])
    metrics = WorkerMetrics([("sms", "transactional")], breaker)

    def state() -> set[str]:
        text = generate_latest(metrics.registry).decode()
        assert_fixed_labels(text)
        return {s for s in ("closed", "open", "half_open")
                if value(samples(text), "sms_pipeline_worker_breaker_state", state=s) == 1}

    assert state() == {"closed"}
    assert breaker.record_failure() is False
    assert breaker.record_failure() is True  # the second in a row opens it
    assert state() == {"open"}
    assert breaker.record_failure() is False  # a request in flight when it opened: already open
    now[0] = 20.0
    assert state() == {"half_open"}
    assert breaker.record_failure() is True  # the trial failed: opened again
    breaker.record_success()
    assert state() == {"closed"}


@pytest.mark.parametrize(("outcome", "answer"), [
    (SendRefused("429", "Too many requests"), "rate_limited"),
    (SendRefused("230", "Template mismatch"), "refused"),
    (SendRefused("216", "Invalid credentials"), "refused"),
    (SendAmbiguous("read time-out"), "ambiguous"),
    (SendNeverConnected("connection refused"), "never_connected"),
])
def test_a_requests_answer_is_one_of_the_fixed_values(outcome, answer):
    assert answer_of(outcome) == answer
