"""The client against a running simulator on loopback (real HTTP, no mocks)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import NamedTuple
from zoneinfo import ZoneInfo

import pytest

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.provider import ProviderClient
from sms_pipeline.settings import Secret
from sms_pipeline.simulator import RunningSimulator, run_simulator


class Account(NamedTuple):
    userid: str
    password: str
    api_key: str
    timezone: ZoneInfo


ACCOUNT = Account("demo", "pw-Zq81-never-logged", "key-Hh27-never-logged", ZoneInfo("Asia/Kolkata"))
# A fixed past instant (10:00 in Kolkata): runs are reproducible and days of
# virtual time lie ahead before the clock would reach real time.
START = datetime(2025, 6, 10, 4, 30, tzinfo=UTC)


@pytest.fixture
def account() -> Account:
    return ACCOUNT


@pytest.fixture
def start_time() -> datetime:
    return START


@pytest.fixture
def sim_clock(start_time: datetime) -> VirtualClock:
    return VirtualClock(start_time)


@pytest.fixture
def sim(sim_clock: VirtualClock) -> Iterator[RunningSimulator]:
    with run_simulator(clock=sim_clock, seed=7, timezone=ACCOUNT.timezone, userid=ACCOUNT.userid,
                       password=ACCOUNT.password, api_key=ACCOUNT.api_key) as running:
        yield running


@pytest.fixture
def make_client(sim: RunningSimulator) -> Iterator[Callable[..., ProviderClient]]:
    """A factory of clients pointed at ``sim``; options override the test defaults."""
    made: list[ProviderClient] = []

    def make(**options: object) -> ProviderClient:
        settings: dict[str, object] = dict(
            userid=ACCOUNT.userid, password=Secret(ACCOUNT.password), api_key=None, timezone=ACCOUNT.timezone,
            connect_timeout=1.0, read_timeout=2.0, requests_per_s=500.0, max_retries=3, backoff_s=0.01,
        )
        settings.update(options)
        made.append(ProviderClient(sim.base_url, **settings))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for provider in made:
        provider.close()


@pytest.fixture
def client(make_client: Callable[..., ProviderClient]) -> ProviderClient:
    return make_client()
