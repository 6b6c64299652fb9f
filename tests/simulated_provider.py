"""A simulator on the test's clock and a real client for it: what the worker and OTP tests share.

Conftests import the fixtures by name (``from simulated_provider import clock,
simulator, client``); helpers import :func:`make_client`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.settings import Secret
from sms_pipeline.simulator.server import RunningSimulator, run_simulator

PROVIDER_ZONE = "Asia/Kolkata"


def make_client(sim: RunningSimulator, *, userid: str = "demo", password: str = "demo",
                read_timeout: float = 5.0) -> ProviderClient:
    return ProviderClient(sim.base_url, userid, Secret(password), None, ZoneInfo(PROVIDER_ZONE),
                          connect_timeout=2.0, read_timeout=read_timeout)


@pytest.fixture
def clock() -> VirtualClock:
    """Six hours behind real time, whatever the hour: room to move past leases, expiries and retry windows."""
    return VirtualClock(datetime.now(UTC).replace(microsecond=0) - timedelta(hours=6))


@pytest.fixture
def simulator(clock) -> Iterator[RunningSimulator]:
    with run_simulator(clock=clock, timezone=PROVIDER_ZONE) as sim:
        yield sim


@pytest.fixture
def client(simulator: RunningSimulator) -> Iterator[ProviderClient]:
    with make_client(simulator) as c:
        yield c
