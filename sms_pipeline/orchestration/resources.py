"""Dagster resources: settings, database, provider client and clock.

Secrets reach the provider resource through ``EnvVar`` so the UI shows the
variable's name, never its value.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import dagster as dg
import psycopg

from sms_pipeline import settings as settings_module
from sms_pipeline.core.clock import Clock, FrozenClock, RealClock
from sms_pipeline.db import connection
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.settings import Secret, Settings


class SettingsResource(dg.ConfigurableResource):
    """The validated ``SMS_PIPELINE_*`` / ``SMS_PROVIDER_*`` settings of this process."""

    def get(self) -> Settings:
        return settings_module.load()


class DatabaseResource(dg.ConfigurableResource):
    """The application database; ``url`` unset means the embedded server."""

    url: str | None = None

    def dsn(self) -> str:
        return self.url or connection.app_url(settings_module.load())

    @contextmanager
    def connect(self, *, autocommit: bool = False) -> Iterator[psycopg.Connection]:
        with connection.connect_url(self.dsn(), autocommit=autocommit) as conn:
            yield conn


class ProviderResource(dg.ConfigurableResource):
    """The provider client; credentials come from the environment by name."""

    base_url: str
    userid: str
    password: str | None = None
    api_key: str | None = None
    timezone: str = "Asia/Kolkata"

    def client(self) -> ProviderClient:
        """A new client (a context manager: close it when the step is done)."""
        base = settings_module.load()
        cfg = settings_module.replace(
            base,
            provider_base_url=self.base_url,
            provider_userid=self.userid,
            provider_password=Secret(self.password) if self.password else None,
            provider_api_key=Secret(self.api_key) if self.api_key else None,
            provider_timezone=ZoneInfo(self.timezone),
        )
        return ProviderClient.from_settings(cfg)


class ClockResource(dg.ConfigurableResource):
    """Real time, or a fixed instant (the demo and tests run on a virtual clock)."""

    frozen_at: str | None = None

    def clock(self) -> Clock:
        if self.frozen_at:
            return FrozenClock(datetime.fromisoformat(self.frozen_at))
        return RealClock()


def build_resources(settings: Settings) -> dict[str, dg.ConfigurableResource]:
    def secret_env(name: str) -> str | None:
        # EnvVar keeps the value out of the UI; only reference variables that are set.
        return dg.EnvVar(name) if os.environ.get(name) else None

    return {
        "settings": SettingsResource(),
        "database": DatabaseResource(url=dg.EnvVar("SMS_PIPELINE_DATABASE_URL") if settings.database_url else None),
        "provider": ProviderResource(
            base_url=settings.provider_base_url,
            userid=settings.provider_userid,
            password=secret_env("SMS_PROVIDER_PASSWORD"),
            api_key=secret_env("SMS_PROVIDER_API_KEY"),
            timezone=settings.provider_timezone.key,
        ),
        "clock": ClockResource(),
    }
