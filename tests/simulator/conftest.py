"""A running simulator and a plain HTTP client, to check the wire format itself."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.simulator import RunningSimulator, run_simulator

# A fixed past instant (10:00 in Kolkata), so runs are reproducible.
START = datetime(2025, 6, 10, 4, 30, tzinfo=UTC)


@pytest.fixture
def start_time() -> datetime:
    return START


@pytest.fixture
def sim(start_time: datetime) -> Iterator[RunningSimulator]:
    with run_simulator(clock=VirtualClock(start_time), seed=7) as running:
        yield running


@pytest.fixture
def http(sim: RunningSimulator) -> Iterator[httpx.Client]:
    """Talks to the provider API (through the fault proxy); paths relative to /SMSApi."""
    with httpx.Client(base_url=sim.base_url, timeout=5) as client:
        yield client


@pytest.fixture
def admin(sim: RunningSimulator) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.admin_url, timeout=5) as client:
        yield client
