"""The ingest against a running simulator, a real Postgres and real Dagster runs.

The application's settings are loaded, exactly as in production, from the
environment a CLI subprocess of the test runs with (``app_env``), so the
assets run with the project's own resources built from them; only the clock
resource is pinned to the simulator's virtual time.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from sms_pipeline import settings as settings_module
from sms_pipeline.core.provider_time import local_date, localise
from sms_pipeline.provider import ProviderClient
from sms_pipeline.simulator import RunningSimulator
from tests.support.environment import app_environ, provider_variables
from tests.support.ingest import reset_numbers
from tests.support.provider import DEMO_ACCOUNT, Account

DAYS_BACK = 6  # the virtual clock starts at 10:00 provider-local, this many days before today


@pytest.fixture(autouse=True)
def _fresh_numbers() -> None:
    reset_numbers()


@pytest.fixture
def provider_tz() -> ZoneInfo:
    return ZoneInfo("Asia/Kolkata")


@pytest.fixture
def start_time(provider_tz: ZoneInfo) -> datetime:
    today = local_date(datetime.now().astimezone(), provider_tz)
    return localise(datetime.combine(today - timedelta(days=DAYS_BACK), time(10)), provider_tz)


@pytest.fixture
def account(provider_tz: ZoneInfo) -> Account:
    return DEMO_ACCOUNT._replace(timezone=provider_tz)


@pytest.fixture
def simulator_seed() -> int:
    return 11


@pytest.fixture
def app_env(db_url: str, sim: RunningSimulator, provider_tz: ZoneInfo, tmp_path: Path) -> dict[str, str]:
    """The environment the application (and a CLI subprocess) runs with."""
    env = app_environ(
        SMS_PIPELINE_HOME=str(tmp_path / "home"),
        SMS_PIPELINE_DATABASE_URL=db_url,
        **provider_variables(sim.base_url, provider_tz.key),
        SMS_PIPELINE_REPORT_REQUESTS_PER_S="200",
        SMS_PIPELINE_REPORT_CONCURRENCY="4",
    )
    env.pop("DAGSTER_HOME", None)
    return env


@pytest.fixture
def app_settings(app_env: dict[str, str]) -> settings_module.Settings:
    return settings_module.load(app_env)


@pytest.fixture
def client(app_settings: settings_module.Settings) -> Iterator[ProviderClient]:
    """The provider client the tests send traffic with (same account as the application)."""
    with ProviderClient.from_settings(app_settings, backoff_s=0.01) as provider:
        yield provider
