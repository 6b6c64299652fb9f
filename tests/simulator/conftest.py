"""A running simulator and a plain HTTP client, to check the wire format itself."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from sms_pipeline.simulator import RunningSimulator


@pytest.fixture
def reproducible() -> bool:
    return True


@pytest.fixture
def http(sim: RunningSimulator) -> Iterator[httpx.Client]:
    """Talks to the provider API (through the fault proxy); paths relative to /SMSApi."""
    with httpx.Client(base_url=sim.base_url, timeout=5) as client:
        yield client


@pytest.fixture
def admin(sim: RunningSimulator) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.admin_url, timeout=5) as client:
        yield client
