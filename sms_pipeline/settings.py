"""One settings object, read from the environment and validated at start.

Every variable is declared once in ``_FIELDS``; an ``SMS_PIPELINE_*`` or
``SMS_PROVIDER_*`` variable that is not declared there is refused, because a
typo in a setting otherwise silently falls back to a default.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from datetime import date
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sms_pipeline.errors import SettingsError

PREFIXES = ("SMS_PIPELINE_", "SMS_PROVIDER_")


class Secret:
    """A string that never shows itself in reprs, logs or exception text."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise ValueError("must be a positive integer")
    return value


def _non_negative_int(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError("must be zero or more")
    return value


def _positive_float(raw: str) -> float:
    value = float(raw)
    if not value > 0:
        raise ValueError("must be a positive number")
    return value


def _zone(raw: str) -> ZoneInfo:
    try:
        return ZoneInfo(raw)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError("must be an IANA time zone such as Asia/Kolkata") from exc


def _postgres_url(raw: str) -> str:
    if not raw.startswith(("postgresql://", "postgres://")):
        raise ValueError("must start with postgresql://")
    return raw


def _database_name(raw: str) -> str:
    if not raw.replace("_", "").isalnum() or not raw[0].isalpha():
        raise ValueError("must be a plain database name (letters, digits, underscores)")
    return raw


def _http_url(raw: str) -> str:
    if not raw.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return raw.rstrip("/")


def _log_level(raw: str) -> str:
    level = raw.upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise ValueError("must be one of DEBUG, INFO, WARNING, ERROR")
    return level


def _otp_code_type(raw: str) -> str:
    if raw not in {"num", "alpha", "alphanum"}:
        raise ValueError("must be num, alpha or alphanum")
    return raw


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str | None
    dagster_database: str
    test_database_url: str | None
    log_level: str
    partition_start: date
    correlation_window_s: int
    claim_lease_s: int
    validity_h: int
    lookback_days: int
    non_submission_grace_h: int
    batch_size: int
    circuit_breaker_failures: int
    circuit_breaker_cooldown_s: float
    otp_hmac_key: Secret | None
    otp_code_length: int
    otp_code_type: str
    otp_expiry_s: int
    otp_max_attempts: int
    report_concurrency: int
    report_max_retries: int
    report_requests_per_s: float
    provider_base_url: str
    provider_userid: str
    provider_password: Secret | None
    provider_api_key: Secret | None
    provider_timezone: ZoneInfo
    provider_connect_timeout_s: float
    provider_read_timeout_s: float

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"


@dataclass(frozen=True)
class _Field:
    env: str
    attr: str
    parse: Callable[[str], Any]
    default: str | None
    help: str


_FIELDS: tuple[_Field, ...] = (
    _Field("SMS_PIPELINE_HOME", "home", lambda s: Path(s).expanduser(), ".sms-pipeline",
           "folder for the embedded Postgres, Dagster's home and local state"),
    _Field("SMS_PIPELINE_DATABASE_URL", "database_url", _postgres_url, None,
           "external Postgres; unset = embedded server in SMS_PIPELINE_HOME"),
    _Field("SMS_PIPELINE_DAGSTER_DATABASE", "dagster_database", _database_name, "dagster",
           "database (on the same server) for Dagster's runs, events and schedules"),
    _Field("SMS_PIPELINE_TEST_DATABASE_URL", "test_database_url", _postgres_url, None,
           "server the test suite clones its databases on; unset = embedded"),
    _Field("SMS_PIPELINE_LOG_LEVEL", "log_level", _log_level, "INFO", "log level"),
    _Field("SMS_PIPELINE_PARTITION_START", "partition_start", date.fromisoformat, "2026-01-01",
           "first day partition (fixed so partitions stay stable)"),
    _Field("SMS_PIPELINE_CORRELATION_WINDOW_S", "correlation_window_s", _positive_int, "90",
           "± seconds for correlation by reconstruction"),
    _Field("SMS_PIPELINE_CLAIM_LEASE_S", "claim_lease_s", _positive_int, "300",
           "seconds before a claimed row becomes unknown"),
    _Field("SMS_PIPELINE_VALIDITY_H", "validity_h", _positive_int, "96",
           "hours after submission before a receipt-less message expires"),
    _Field("SMS_PIPELINE_LOOKBACK_DAYS", "lookback_days", _non_negative_int, "5",
           "days re-run by the daily schedule to catch late receipts"),
    _Field("SMS_PIPELINE_NON_SUBMISSION_GRACE_H", "non_submission_grace_h", _non_negative_int, "24",
           "hours after a provider day closes before absence proves non-submission"),
    _Field("SMS_PIPELINE_BATCH_SIZE", "batch_size", _positive_int, "500",
           "recipients per send request"),
    _Field("SMS_PIPELINE_CIRCUIT_BREAKER_FAILURES", "circuit_breaker_failures", _positive_int, "5",
           "consecutive failed sends that stop claiming for a while"),
    _Field("SMS_PIPELINE_CIRCUIT_BREAKER_COOLDOWN_S", "circuit_breaker_cooldown_s", _positive_float, "30",
           "seconds the worker stops claiming after the breaker trips"),
    _Field("SMS_PIPELINE_OTP_HMAC_KEY", "otp_hmac_key", Secret, None,
           "key for the HMAC of OTP codes; unset = a random key kept in SMS_PIPELINE_HOME"),
    _Field("SMS_PIPELINE_OTP_CODE_LENGTH", "otp_code_length", _positive_int, "6", "OTP code length"),
    _Field("SMS_PIPELINE_OTP_CODE_TYPE", "otp_code_type", _otp_code_type, "num", "num, alpha or alphanum"),
    _Field("SMS_PIPELINE_OTP_EXPIRY_S", "otp_expiry_s", _positive_int, "300", "seconds an OTP code is valid"),
    _Field("SMS_PIPELINE_OTP_MAX_ATTEMPTS", "otp_max_attempts", _positive_int, "5",
           "wrong guesses before a code is locked"),
    _Field("SMS_PIPELINE_REPORT_CONCURRENCY", "report_concurrency", _positive_int, "4",
           "concurrent report requests"),
    _Field("SMS_PIPELINE_REPORT_MAX_RETRIES", "report_max_retries", _non_negative_int, "5",
           "retries of a report call on 429, 5xx or time-out"),
    _Field("SMS_PIPELINE_REPORT_REQUESTS_PER_S", "report_requests_per_s", _positive_float, "10",
           "pace of report requests"),
    _Field("SMS_PROVIDER_BASE_URL", "provider_base_url", _http_url, "https://unify.smsgateway.center/SMSApi",
           "provider API base URL"),
    _Field("SMS_PROVIDER_USERID", "provider_userid", str, "demo", "provider account user id"),
    _Field("SMS_PROVIDER_PASSWORD", "provider_password", Secret, None, "provider password"),
    _Field("SMS_PROVIDER_API_KEY", "provider_api_key", Secret, None, "provider API key (sent as a header)"),
    _Field("SMS_PROVIDER_TIMEZONE", "provider_timezone", _zone, "Asia/Kolkata",
           "provider's wall-clock zone for report dates and times"),
    _Field("SMS_PROVIDER_CONNECT_TIMEOUT_S", "provider_connect_timeout_s", _positive_float, "5",
           "connect time-out"),
    _Field("SMS_PROVIDER_READ_TIMEOUT_S", "provider_read_timeout_s", _positive_float, "30", "read time-out"),
)

assert {f.attr for f in _FIELDS} == {f.name for f in fields(Settings)}, "settings table out of step"


def describe() -> list[tuple[str, str | None, str]]:
    """(variable, default, meaning) for every setting, for the README and `--help`."""
    return [(f.env, f.default, f.help) for f in _FIELDS]


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and validate settings; raise ``SettingsError`` naming the first bad variable."""
    env = os.environ if environ is None else environ
    known = {f.env for f in _FIELDS}
    unknown = sorted(k for k in env if k.startswith(PREFIXES) and k not in known)
    if unknown:
        raise SettingsError(f"unknown setting {unknown[0]} (known: see `sms-pipeline settings`)")
    values: dict[str, Any] = {}
    for f in _FIELDS:
        raw = env.get(f.env)
        if raw is None or raw == "":
            raw = f.default
        if raw is None:
            values[f.attr] = None
            continue
        try:
            values[f.attr] = f.parse(raw.strip())
        except (ValueError, TypeError) as exc:
            shown = "***" if f.parse is Secret else repr(raw)
            raise SettingsError(f"malformed setting {f.env}={shown}: {exc}") from None
    return Settings(**values)


def replace(settings: Settings, **changes: Any) -> Settings:
    """A copy with some values changed (tests, the demo)."""
    from dataclasses import replace as _replace

    return _replace(settings, **changes)
