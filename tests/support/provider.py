"""A simulator on the test's clock and real clients for it: one set of fixtures for every test directory.

A directory tunes them by overriding the small value fixtures, never by
redefining the simulator: ``reproducible`` (the fixed start and seed below
instead of a start behind real time and seed 0), ``start_time`` (where the
virtual clock starts), ``account`` (the credentials the simulator accepts and
clients send), ``simulator_seed``, ``simulator_options`` (faults, retention,
...) and ``client_options`` (time-outs, pacing of the clients ``make_client``
builds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

import pytest
from pydantic import SecretStr

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.simulator.server import RunningSimulator, run_simulator

PROVIDER_ZONE = "Asia/Kolkata"


class Account(NamedTuple):
    userid: str
    password: str
    api_key: str
    timezone: ZoneInfo


# A fixed past instant (10:00 in Kolkata) for tests that must be reproducible
# run to run; days of virtual time lie ahead before the clock reaches real time.
REPRODUCIBLE_START = datetime(2025, 6, 10, 4, 30, tzinfo=UTC)
REPRODUCIBLE_SEED = 7

# The simulator's own defaults: what a CLI subprocess or a plain HTTP test sends.
DEMO_ACCOUNT = Account("demo", "demo", "demo-key", ZoneInfo(PROVIDER_ZONE))


def client_for(sim: RunningSimulator, *, account: Account = DEMO_ACCOUNT, **options: Any) -> ProviderClient:
    """A real client pointed at ``sim``; ``options`` override the account and the client's defaults."""
    arguments: dict[str, Any] = dict(
        userid=account.userid, password=SecretStr(account.password), api_key=None, timezone=account.timezone,
        connect_timeout=2.0, read_timeout=5.0,
    )
    arguments.update(options)
    if isinstance(arguments["password"], str):
        arguments["password"] = SecretStr(arguments["password"])
    return ProviderClient(sim.base_url, **arguments)


@pytest.fixture
def reproducible() -> bool:
    """Whether the simulator starts at ``REPRODUCIBLE_START`` with ``REPRODUCIBLE_SEED``; a directory overrides it."""
    return False


@pytest.fixture
def start_time(reproducible: bool) -> datetime:
    """Six hours behind real time, whatever the hour: room to move past leases, expiries and retry windows.

    ``REPRODUCIBLE_START`` instead where the tests must be ``reproducible``.
    """
    if reproducible:
        return REPRODUCIBLE_START
    return datetime.now(UTC).replace(microsecond=0) - timedelta(hours=6)


@pytest.fixture
def clock(start_time: datetime) -> VirtualClock:
    return VirtualClock(start_time)


@pytest.fixture
def account() -> Account:
    return DEMO_ACCOUNT


@pytest.fixture
def simulator_seed(reproducible: bool) -> int:
    return REPRODUCIBLE_SEED if reproducible else 0


@pytest.fixture
def simulator_options() -> dict[str, Any]:
    """Extra ``run_simulator`` options (faults, retention, ...); a directory or test overrides it."""
    return {}


@pytest.fixture
def sim(clock: VirtualClock, account: Account, simulator_seed: int,
        simulator_options: dict[str, Any]) -> Iterator[RunningSimulator]:
    """The provider simulator over real HTTP on loopback, sharing the test's clock."""
    with run_simulator(clock=clock, seed=simulator_seed, timezone=account.timezone, userid=account.userid,
                       password=account.password, api_key=account.api_key, **simulator_options) as running:
        yield running


@pytest.fixture
def client_options() -> dict[str, Any]:
    """Options of the clients ``make_client`` builds; a directory overrides them."""
    return {}


@pytest.fixture
def make_client(sim: RunningSimulator, account: Account,
                client_options: dict[str, Any]) -> Iterator[Callable[..., ProviderClient]]:
    """A factory of clients pointed at ``sim`` (closed after the test); options override the defaults."""
    made: list[ProviderClient] = []

    def make(**options: Any) -> ProviderClient:
        made.append(client_for(sim, account=account, **{**client_options, **options}))
        return made[-1]

    yield make
    for provider in made:
        provider.close()


@pytest.fixture
def client(make_client: Callable[..., ProviderClient]) -> ProviderClient:
    return make_client()
