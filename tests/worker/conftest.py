"""Fixtures for the worker tests: a simulator on the test's clock and a real client for it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from worker_support import PROVIDER_ZONE, make_client

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.simulator.server import RunningSimulator, run_simulator


@pytest.fixture
def clock() -> VirtualClock:
    """Six hours behind real time, whatever the hour: room to move past leases and expiries."""
    return VirtualClock(datetime.now(UTC).replace(microsecond=0) - timedelta(hours=6))


@pytest.fixture
def simulator(clock) -> Iterator[RunningSimulator]:
    with run_simulator(clock=clock, timezone=PROVIDER_ZONE) as sim:
        yield sim


@pytest.fixture
def client(simulator: RunningSimulator) -> Iterator[ProviderClient]:
    with make_client(simulator) as c:
        yield c
