"""Dagster resources: database, provider client, clock, the pipeline's values and the report guard.

:func:`build_resources` makes them once, from the one validated settings
object, and each carries what it uses as its own config: nothing here reads
the environment again. Secrets (the provider's password or API key, and the
database URL, which may hold a password) are referenced by variable name
through ``EnvVar``, so the UI shows the name, never the value.
"""

from __future__ import annotations

from contextlib import contextmanager
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import dagster as dg
import psycopg
from pydantic import SecretStr

from sms_pipeline import hmac_keys
from sms_pipeline.core.clock import Clock, FrozenClock, RealClock
from sms_pipeline.db import connection
from sms_pipeline.marts.project import dbt_cli, dbt_project
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.settings import (NonNegativeInt, PositiveInt, ResendClasses, SendSpread, Settings, WorkMemMB,
                                   ZoneName, resend_classes)


def _default(name: str) -> Any:
    """The default of setting ``name``: the resources' defaults are the settings' own."""
    return Settings.model_fields[name].default


class DatabaseResource(dg.ConfigurableResource):
    """The application database: ``url``, else the embedded server kept in ``home``."""

    url: str | None = None
    home: str | None = None

    def dsn(self) -> str:
        if self.url:
            return self.url
        if not self.home:
            raise ValueError("DatabaseResource needs a url, or the home folder of the embedded server")
        return connection.app_url_for(None, Path(self.home))

    @contextmanager
    def connect(self, *, autocommit: bool = False) -> Iterator[psycopg.Connection]:
        with connection.connect_url(self.dsn(), autocommit=autocommit) as conn:
            yield conn


class ProviderResource(dg.ConfigurableResource):
    """The provider client: account, zone, time-outs, report pacing and retries (as in the settings)."""

    base_url: str
    userid: str
    password: str | None = None  # an EnvVar reference in a deployment (see build_resources)
    api_key: str | None = None
    timezone: str = _default("provider_timezone").key
    connect_timeout_s: float = _default("provider_connect_timeout_s")
    read_timeout_s: float = _default("provider_read_timeout_s")
    requests_per_s: float = _default("report_requests_per_s")
    max_retries: int = _default("report_max_retries")

    def client(self) -> ProviderClient:
        """A new client (a context manager: close it when the step is done)."""
        return ProviderClient(
            self.base_url,
            self.userid,
            SecretStr(self.password) if self.password else None,
            SecretStr(self.api_key) if self.api_key else None,
            ZoneInfo(self.timezone),
            connect_timeout=self.connect_timeout_s,
            read_timeout=self.read_timeout_s,
            requests_per_s=self.requests_per_s,
            max_retries=self.max_retries,
        )


class ClockResource(dg.ConfigurableResource):
    """Real time, or a fixed instant (the demo and tests run on a virtual clock)."""

    frozen_at: str | None = None

    def clock(self) -> Clock:
        if self.frozen_at:
            return FrozenClock(datetime.fromisoformat(self.frozen_at))
        return RealClock()


class PipelineResource(dg.ConfigurableResource):
    """The values the assets run with (as in the settings): the provider's zone, windows, lease, pacing.

    Each value has its setting's own type and checks: a value set in the launchpad that its setting would
    refuse fails the run when its resources start, with the setting's message (not Postgres mid-run).
    Checks across settings (a lease that outlasts a provider request) stay with the environment's settings.
    """

    provider_timezone: ZoneName = _default("provider_timezone").key
    correlation_window_s: PositiveInt = _default("correlation_window_s")
    campaign_send_spread_s: SendSpread = _default("campaign_send_spread_s")
    non_submission_grace_h: NonNegativeInt = _default("non_submission_grace_h")
    resend_after_proof: ResendClasses = _default("resend_after_proof")
    resend_max_age_h: NonNegativeInt = _default("resend_max_age_h")
    push_inbox_keep_h: PositiveInt = _default("push_inbox_keep_h")
    max_send_delay_h: PositiveInt = _default("max_send_delay_h")
    claim_lease_s: PositiveInt = _default("claim_lease_s")
    validity_h: PositiveInt = _default("validity_h")
    report_concurrency: PositiveInt = _default("report_concurrency")
    lookback_days: NonNegativeInt = _default("lookback_days")
    reconcile_work_mem_mb: WorkMemMB = _default("reconcile_work_mem_mb")
    text_hmac_key: str | None = None  # an EnvVar reference in a deployment (see build_resources)
    home: str = str(_default("home"))  # where the text key is kept when none is configured

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.provider_timezone)

    def text_key(self) -> bytes:
        """The message texts' HMAC key (``SMS_PIPELINE_TEXT_HMAC_KEY``, else the home's key file)."""
        configured = SecretStr(self.text_hmac_key) if self.text_hmac_key else None
        return hmac_keys.load_key(hmac_keys.TEXT_KEY, configured, Path(self.home))

    @property
    def resend_classes(self) -> tuple[str, ...]:
        """``resend_after_proof`` (as in the settings: comma-separated, or ``none``) as classes; otp refused."""
        return resend_classes(self.resend_after_proof)


class ReportGuardResource(dg.ConfigurableResource):
    """Whether this run may replace a stored report with a smaller one (docs/design.md#report-guards).

    The one place the ingest assets (day report, by-transaction reports) and
    the provider summary take that permission from. Off by default: a day
    that would shrink fails its step. A person who checked turns it on for
    one run: ``sms-pipeline materialize --allow-shrink``, or the run config
    ``resources: {report_guard: {config: {allow_shrink: true}}}`` in the
    launchpad (a configured resource's values are only defaults there).
    """

    allow_shrink: bool = False


def build_resources(settings: Settings, *, secrets_by_name: bool = True) -> dict[str, dg.ConfigurableResource]:
    """The shared resources, from the one validated settings object.

    ``secrets_by_name``: each secret that is set becomes ``EnvVar(variable)``,
    which Dagster resolves in the run's process from the environment the
    settings were read from (the UI shows the name only). ``False`` puts the
    values themselves in the config: only for tests whose settings come from
    a mapping, not the process environment; a deployment's UI would show them.
    """

    def secret(variable: str, value: SecretStr | str | None) -> Any:
        if value is None:
            return None
        if secrets_by_name:
            return dg.EnvVar(variable)
        return value.get_secret_value() if isinstance(value, SecretStr) else value

    return {
        "database": DatabaseResource(
            url=secret("SMS_PIPELINE_DATABASE_URL", settings.database_url), home=str(settings.home)
        ),
        "provider": ProviderResource(
            base_url=settings.provider_base_url,
            userid=settings.provider_userid,
            password=secret("SMS_PROVIDER_PASSWORD", settings.provider_password),
            api_key=secret("SMS_PROVIDER_API_KEY", settings.provider_api_key),
            timezone=settings.provider_timezone.key,
            connect_timeout_s=settings.provider_connect_timeout_s,
            read_timeout_s=settings.provider_read_timeout_s,
            requests_per_s=settings.report_requests_per_s,
            max_retries=settings.report_max_retries,
        ),
        "clock": ClockResource(),
        "pipeline": PipelineResource(
            provider_timezone=settings.provider_timezone.key,
            correlation_window_s=settings.correlation_window_s,
            campaign_send_spread_s=settings.campaign_send_spread_s,
            non_submission_grace_h=settings.non_submission_grace_h,
            resend_after_proof=settings.resend_after_proof,
            resend_max_age_h=settings.resend_max_age_h,
            push_inbox_keep_h=settings.push_inbox_keep_h,
            max_send_delay_h=settings.max_send_delay_h,
            claim_lease_s=settings.claim_lease_s,
            validity_h=settings.validity_h,
            report_concurrency=settings.report_concurrency,
            lookback_days=settings.lookback_days,
            reconcile_work_mem_mb=settings.reconcile_work_mem_mb,
            text_hmac_key=secret("SMS_PIPELINE_TEXT_HMAC_KEY", settings.text_hmac_key),
            home=str(settings.home),
        ),
        "report_guard": ReportGuardResource(),
        "dbt": dbt_cli(dbt_project(settings.home)),
    }
