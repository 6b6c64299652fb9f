"""Fixtures for the OTP tests: a simulator on the test's clock, a real client, an OTP policy."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from otp_support import PROVIDER_ZONE, TEST_KEY, make_client

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.otp.send import OtpPolicy
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.simulator.server import RunningSimulator, run_simulator


@pytest.fixture
def clock() -> VirtualClock:
    """Six hours behind real time: room to move past expiries and retry-after windows."""
    return VirtualClock(datetime.now(UTC).replace(microsecond=0) - timedelta(hours=6))


@pytest.fixture
def simulator(clock) -> Iterator[RunningSimulator]:
    with run_simulator(clock=clock, timezone=PROVIDER_ZONE) as sim:
        yield sim


@pytest.fixture
def client(simulator: RunningSimulator) -> Iterator[ProviderClient]:
    with make_client(simulator) as c:
        yield c


@pytest.fixture
def policy() -> OtpPolicy:
    return OtpPolicy(code_length=6, code_type="num", expiry_s=300, max_attempts=3, hmac_key=TEST_KEY)
