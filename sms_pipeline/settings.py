"""One settings object, read from the environment and validated at start.

``Settings`` is a frozen pydantic-settings model: each field names its one
environment variable (``validation_alias``), its default and its meaning
(``description``, shown by ``sms-pipeline settings`` and the README). An
``SMS_PIPELINE_*`` or ``SMS_PROVIDER_*`` variable that is no field's is
refused, because a typo in a setting otherwise silently falls back to a
default. :func:`load` is the one way in; a modified copy is
``settings.model_copy(update={...})``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date
from pathlib import Path
from typing import Annotated, Any, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from sms_pipeline.core.states import MessageClass
from sms_pipeline.core.redaction import mask_url_password
from sms_pipeline.errors import SettingsError

PREFIXES = ("SMS_PIPELINE_", "SMS_PROVIDER_")
# The receipt push's fields, each named by a SMS_PIPELINE_WEBHOOK_PARAM_<FIELD> setting.
WEBHOOK_FIELDS = ("txn_id", "msg_id", "mobile", "error_code", "received_time", "delivered_time")


def _whole_number(raw: Any) -> Any:
    # int() refuses "5.0" and "1e3", which pydantic's lax mode would take.
    return int(raw) if isinstance(raw, str) else raw


def _positive(value: int) -> int:
    if value <= 0:
        raise ValueError("must be a positive integer")
    return value


def _non_negative(value: int) -> int:
    if value < 0:
        raise ValueError("must be zero or more")
    return value


def _positive_number(value: float) -> float:
    if not value > 0:  # NaN too
        raise ValueError("must be a positive number")
    return value


def _iso_date(raw: Any) -> Any:
    return date.fromisoformat(raw) if isinstance(raw, str) else raw


def _zone(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return ZoneInfo(raw)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError("must be an IANA time zone such as Asia/Kolkata") from exc


def _zone_name(raw: str) -> str:
    # A zone checked but kept as its name, for config that holds plain values (the Dagster resources).
    return _zone(raw).key


def _postgres_url(raw: str) -> str:
    if not raw.startswith(("postgresql://", "postgres://")):
        raise ValueError("must start with postgresql://")
    # Each host of the authority (libpq takes host1:port1,host2:port2) with a port of 1-65535.
    authority = raw.split("://", 1)[1].rpartition("@")[2].split("/", 1)[0].split("?", 1)[0]
    for host in authority.split(","):
        if host.startswith("["):  # [IPv6]:port
            port = host.partition("]")[2].removeprefix(":")
        else:
            port = host.rpartition(":")[2] if ":" in host else ""
        if port and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
            raise ValueError("has a port that is not a number from 1 to 65535")
    return raw


def _port(value: int) -> int:
    if not 1 <= value <= 65535:
        raise ValueError("must be a port number from 1 to 65535")
    return value


def _segment_limit(value: int) -> int:
    # A concatenated SMS has at most 255 parts (its header counts them in one byte).
    if not 1 <= value <= 255:
        raise ValueError("must be a whole number from 1 to 255")
    return value


# Numbers in one provider-side campaign request: one form post of about 13 bytes a number (1.3 MB at the
# bound), and a claim holds that many rows until its answer is written.
MAX_CAMPAIGN_REQUEST_SIZE = 100_000


def _campaign_request_size(value: int) -> int:
    if not 1 <= value <= MAX_CAMPAIGN_REQUEST_SIZE:
        raise ValueError(f"must be a whole number from 1 to {MAX_CAMPAIGN_REQUEST_SIZE:,}")
    return value


MAX_WORK_MEM_MB = 2_097_151  # Postgres' work_mem is at most 2147483647 kB


def _work_mem_mb(value: int) -> int:
    if not 1 <= value <= MAX_WORK_MEM_MB:
        raise ValueError(f"must be a whole number of megabytes from 1 to {MAX_WORK_MEM_MB:,} (Postgres' limit)")
    return value


def _absolute_folder(path: Path) -> Path:
    # Fixed when the settings are read: code that changes the process's working
    # directory later (dagster-dbt's column-metadata threads run in the dbt
    # project's folder) must not find another home, and start another embedded
    # server there.
    return path.expanduser().absolute()


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


def _true_or_false(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    if raw.lower() not in ("true", "false"):
        raise ValueError("must be true or false")
    return raw.lower() == "true"


def _otp_code_type(raw: str) -> str:
    if raw not in {"num", "alpha", "alphanum"}:
        raise ValueError("must be num, alpha or alphanum")
    return raw


# What a secret in a URL path may hold without escaping (RFC 3986 unreserved characters), and its least length.
_URL_SECRET = re.compile(r"[A-Za-z0-9._~-]{16,}")


def _parameter_name(raw: str) -> str:
    if not raw or len(raw) > 64 or not raw.isprintable() or any(ch.isspace() for ch in raw):
        raise ValueError("must be a parameter name of 1 to 64 printable characters without spaces")
    return raw


def resend_classes(raw: str) -> tuple[str, ...]:
    """The classes of ``SMS_PIPELINE_RESEND_AFTER_PROOF`` (comma-separated, or ``none``); ValueError if bad."""
    names = [part.strip().lower() for part in raw.split(",") if part.strip()]
    if names == ["none"]:
        return ()
    if MessageClass.otp.value in names:
        raise ValueError("otp is never re-sent automatically: a late code is useless (the user asks for a new one)")
    unknown = [n for n in names if n not in {c.value for c in MessageClass}]
    if unknown or not names:
        raise ValueError("must be message classes separated by commas (transactional, promotional), or none")
    return tuple(dict.fromkeys(names))


def _at_most_a_day(value: int) -> int:
    # A handed-over row's proof waits for the complete reports of the days its spread reaches: a longer
    # spread is no campaign's pace, and would hold such rows unproved for days.
    if value > 86_400:
        raise ValueError("must be at most 86400 (a day)")
    return value


def _resend_classes(raw: str) -> str:
    return ",".join(resend_classes(raw)) or "none"


PositiveInt = Annotated[int, BeforeValidator(_whole_number), AfterValidator(_positive)]
NonNegativeInt = Annotated[int, BeforeValidator(_whole_number), AfterValidator(_non_negative)]
PositiveFloat = Annotated[float, AfterValidator(_positive_number)]
IsoDate = Annotated[date, BeforeValidator(_iso_date)]
Zone = Annotated[ZoneInfo, BeforeValidator(_zone)]
PostgresUrl = Annotated[str, AfterValidator(_postgres_url)]
SegmentLimit = Annotated[int, BeforeValidator(_whole_number), AfterValidator(_segment_limit)]
ParameterName = Annotated[str, AfterValidator(_parameter_name)]
Port = Annotated[int, BeforeValidator(_whole_number), AfterValidator(_port)]
CampaignRequestSize = Annotated[int, BeforeValidator(_whole_number), AfterValidator(_campaign_request_size)]
SendSpread = Annotated[PositiveInt, AfterValidator(_at_most_a_day)]
WorkMemMB = Annotated[int, BeforeValidator(_whole_number), AfterValidator(_work_mem_mb)]
ResendClasses = Annotated[str, AfterValidator(_resend_classes)]
ZoneName = Annotated[str, AfterValidator(_zone_name)]


def _setting(variable: str, default: Any, meaning: str, *, credential: bool = False) -> Any:
    """A field read from ``variable`` (exactly that name) with its default and help text.

    ``credential``: a value that may embed a password (a database URL) is
    kept out of the settings' repr and out of error messages.
    """
    return Field(default, validation_alias=variable, description=meaning, repr=not credential)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        case_sensitive=True,  # the exact names below, as before
        env_ignore_empty=True,  # an empty variable means "use the default"
        arbitrary_types_allowed=True,  # ZoneInfo on pydantic versions without built-in support
    )

    home: Annotated[Path, AfterValidator(_absolute_folder)] = _setting(
        "SMS_PIPELINE_HOME", Path(".sms-pipeline"),
        "folder for the embedded Postgres, Dagster's home and local state")
    database_url: PostgresUrl | None = _setting(
        "SMS_PIPELINE_DATABASE_URL", None, "external Postgres; unset = embedded server in SMS_PIPELINE_HOME",
        credential=True)
    dagster_database: Annotated[str, AfterValidator(_database_name)] = _setting(
        "SMS_PIPELINE_DAGSTER_DATABASE", "dagster",
        "database (on the same server) for Dagster's runs, events and schedules")
    test_database_url: PostgresUrl | None = _setting(
        "SMS_PIPELINE_TEST_DATABASE_URL", None, "server the test suite clones its databases on; unset = embedded",
        credential=True)
    log_level: Annotated[str, AfterValidator(_log_level)] = _setting("SMS_PIPELINE_LOG_LEVEL", "INFO", "log level")
    partition_start: IsoDate | None = _setting(
        "SMS_PIPELINE_PARTITION_START", None,
        "first day partition; unset = the first of the month of the first `db upgrade`, recorded in the database")
    correlation_window_s: PositiveInt = _setting(
        "SMS_PIPELINE_CORRELATION_WINDOW_S", 90, "± seconds for correlation by reconstruction")
    campaign_send_spread_s: SendSpread = _setting(
        "SMS_PIPELINE_CAMPAIGN_SEND_SPREAD_S", 21_600,
        "seconds after a provider-side campaign's scheduled time the provider may still be sending it "
        "(throttled, a large campaign takes hours): reconstruction looks that far after a handed-over row's "
        "time, and its proof of non-submission waits for the reports that far (at most 86400)")
    claim_lease_s: PositiveInt = _setting(
        "SMS_PIPELINE_CLAIM_LEASE_S", 300,
        "seconds a worker may hold rows: then a claimed row (request never started) goes back to pending, "
        "a sending row (request may have left) becomes unknown")
    validity_h: PositiveInt = _setting(
        "SMS_PIPELINE_VALIDITY_H", 96, "hours after submission before a receipt-less message expires")
    reconcile_work_mem_mb: WorkMemMB = _setting(
        "SMS_PIPELINE_RECONCILE_WORK_MEM_MB", 256,
        "Postgres work_mem (MB) of the daily and hourly reconciliation's transaction, for each of its sorts, "
        "hashes and the message update's transition tables; lower it on a small server (slower, same result)")
    lookback_days: NonNegativeInt = _setting(
        "SMS_PIPELINE_LOOKBACK_DAYS", 5, "days re-run by the daily schedule to catch late receipts")
    non_submission_grace_h: NonNegativeInt = _setting(
        "SMS_PIPELINE_NON_SUBMISSION_GRACE_H", 24,
        "hours after a provider day closes before absence proves non-submission")
    resend_after_proof: ResendClasses = _setting(
        "SMS_PIPELINE_RESEND_AFTER_PROOF", "transactional",
        "message classes (comma-separated, or none) re-sent automatically once proved never submitted; "
        "otp is refused")
    resend_max_age_h: NonNegativeInt = _setting(
        "SMS_PIPELINE_RESEND_MAX_AGE_H", 72,
        "hours after a message was created beyond which a proved-unsent message is no longer re-sent")
    push_inbox_keep_h: PositiveInt = _setting(
        "SMS_PIPELINE_PUSH_INBOX_KEEP_H", 48,
        "hours a reconciled receipt push stays in the inbox before the hourly upkeep deletes it (its receipt "
        "event stays)")
    batch_size: PositiveInt = _setting("SMS_PIPELINE_BATCH_SIZE", 500, "recipients per send request")
    campaign_request_size: CampaignRequestSize = _setting(
        "SMS_PIPELINE_CAMPAIGN_REQUEST_SIZE", 10_000,
        "recipients per request of a provider-side campaign (sent ahead with its scheduleTime; the provider "
        "splits it into transactions of 1,000), 1 to 100,000")
    worker_concurrency: PositiveInt = _setting(
        "SMS_PIPELINE_WORKER_CONCURRENCY", 2,
        "send loops (threads) per worker process: while one waits for the provider or commits, the other sends")
    circuit_breaker_failures: PositiveInt = _setting(
        "SMS_PIPELINE_CIRCUIT_BREAKER_FAILURES", 5, "consecutive failed sends that stop claiming for a while")
    circuit_breaker_cooldown_s: PositiveFloat = _setting(
        "SMS_PIPELINE_CIRCUIT_BREAKER_COOLDOWN_S", 30.0, "seconds the worker stops claiming after the breaker trips")
    otp_hmac_key: SecretStr | None = _setting(
        "SMS_PIPELINE_OTP_HMAC_KEY", None,
        "key for the HMAC of OTP codes; unset = a random key kept in SMS_PIPELINE_HOME")
    text_hmac_key: SecretStr | None = _setting(
        "SMS_PIPELINE_TEXT_HMAC_KEY", None,
        "key for the HMAC fingerprint of message texts (sent rows and report rows); unset = a random key kept "
        "in SMS_PIPELINE_HOME, allowed only with the embedded database")
    otp_code_length: PositiveInt = _setting("SMS_PIPELINE_OTP_CODE_LENGTH", 6, "OTP code length")
    otp_code_type: Annotated[str, AfterValidator(_otp_code_type)] = _setting(
        "SMS_PIPELINE_OTP_CODE_TYPE", "num", "num, alpha or alphanum")
    otp_expiry_s: PositiveInt = _setting("SMS_PIPELINE_OTP_EXPIRY_S", 300, "seconds an OTP code is valid")
    otp_max_attempts: PositiveInt = _setting(
        "SMS_PIPELINE_OTP_MAX_ATTEMPTS", 5, "wrong guesses before a code is locked")
    otp_retry_after_s: NonNegativeInt = _setting(
        "SMS_PIPELINE_OTP_RETRY_AFTER_S", 30,
        "seconds after an OTP during which intake refuses another to the same number and purpose "
        "(the provider's retryAfter); 0 = no check at intake")
    max_send_delay_h: PositiveInt = _setting(
        "SMS_PIPELINE_MAX_SEND_DELAY_H", 24,
        "hours after its due time a non-OTP message without expires_at may still be sent, then it expires "
        "(an OTP expires SMS_PIPELINE_OTP_EXPIRY_S after it is due)")
    max_body_segments: SegmentLimit = _setting(
        "SMS_PIPELINE_MAX_BODY_SEGMENTS", 10, "longest body intake accepts, in SMS segments (1-255)")
    report_concurrency: PositiveInt = _setting("SMS_PIPELINE_REPORT_CONCURRENCY", 4, "concurrent report requests")
    report_max_retries: NonNegativeInt = _setting(
        "SMS_PIPELINE_REPORT_MAX_RETRIES", 5, "retries of a report call on 429, 5xx or time-out")
    report_requests_per_s: PositiveFloat = _setting(
        "SMS_PIPELINE_REPORT_REQUESTS_PER_S", 10.0, "pace of report requests")
    pool_wait_s: PositiveInt = _setting(
        "SMS_PIPELINE_POOL_WAIT_S", 600,
        "seconds materialize waits for a Dagster pool slot held by another live run before it fails")
    webhook_secret: SecretStr | None = _setting(
        "SMS_PIPELINE_WEBHOOK_SECRET", None,
        "the secret path segment of the receipt-push URL (/dlr/<secret>); `sms-pipeline receiver` refuses to "
        "start without it", credential=True)
    webhook_param_txn_id: ParameterName = _setting(
        "SMS_PIPELINE_WEBHOOK_PARAM_TXN_ID", "txn_id", "receipt-push parameter carrying the transaction id")
    webhook_param_msg_id: ParameterName = _setting(
        "SMS_PIPELINE_WEBHOOK_PARAM_MSG_ID", "msg_id", "receipt-push parameter carrying the message id")
    webhook_param_mobile: ParameterName = _setting(
        "SMS_PIPELINE_WEBHOOK_PARAM_MOBILE", "mobile", "receipt-push parameter carrying the recipient")
    webhook_param_error_code: ParameterName = _setting(
        "SMS_PIPELINE_WEBHOOK_PARAM_ERROR_CODE", "error_code", "receipt-push parameter carrying the error code")
    webhook_param_received_time: ParameterName = _setting(
        "SMS_PIPELINE_WEBHOOK_PARAM_RECEIVED_TIME", "received_time",
        "receipt-push parameter carrying when the provider took the message")
    webhook_param_delivered_time: ParameterName = _setting(
        "SMS_PIPELINE_WEBHOOK_PARAM_DELIVERED_TIME", "delivered_time",
        "receipt-push parameter carrying the final time (stamped on failures too)")
    receiver_pool_size: PositiveInt = _setting(
        "SMS_PIPELINE_RECEIVER_POOL_SIZE", 10, "database connections one receiver process keeps")
    receiver_keep_alive_s: PositiveInt = _setting(
        "SMS_PIPELINE_RECEIVER_KEEP_ALIVE_S", 120,
        "seconds the receiver keeps an idle push connection open; keep it above the idle time of the provider's "
        "client and of any proxy in front (docs/design.md#receipt-push)")
    alert_webhook_url: SecretStr | None = _setting(
        "SMS_PIPELINE_ALERT_WEBHOOK_URL", None,
        "URL alerts are posted to as JSON (a Slack incoming webhook or any service reading its `text` field); "
        "unset = no webhook alerts")
    alert_smtp_url: SecretStr | None = _setting(
        "SMS_PIPELINE_ALERT_SMTP_URL", None,
        "mail server for alerts: smtp://[user:password@]host[:port] (STARTTLS when offered) or smtps://...; "
        "unset = no mail alerts")
    alert_email_to: str | None = _setting(
        "SMS_PIPELINE_ALERT_EMAIL_TO", None, "addresses (comma-separated) alert mails go to")
    alert_email_from: str = _setting(
        "SMS_PIPELINE_ALERT_EMAIL_FROM", "sms-pipeline@localhost", "sender address of alert mails")
    ui_url: Annotated[str, AfterValidator(_http_url)] = _setting(
        "SMS_PIPELINE_UI_URL", "http://127.0.0.1:3000", "address of the Dagster UI, for the run links in alerts")
    metrics_port: Port | None = _setting(
        "SMS_PIPELINE_METRICS_PORT", None,
        "port a worker serves Prometheus metrics on (/metrics); unset = none")
    message_retention_days: NonNegativeInt = _setting(
        "SMS_PIPELINE_MESSAGE_RETENTION_DAYS", 400,
        "days message rows are kept: month partitions wholly older are dropped by the daily upkeep (the marts "
        "keep their aggregates); 0 = keep for ever")
    redact_bodies_after_days: NonNegativeInt = _setting(
        "SMS_PIPELINE_REDACT_BODIES_AFTER_DAYS", 30,
        "days after which the body of a message in a final state is replaced by its fingerprint and length; "
        "0 = never")
    provider_base_url: Annotated[str, AfterValidator(_http_url)] = _setting(
        "SMS_PROVIDER_BASE_URL", "https://unify.smsgateway.center/SMSApi", "provider API base URL")
    provider_userid: str = _setting("SMS_PROVIDER_USERID", "demo", "provider account user id")
    provider_password: SecretStr | None = _setting("SMS_PROVIDER_PASSWORD", None, "provider password")
    provider_api_key: SecretStr | None = _setting(
        "SMS_PROVIDER_API_KEY", None, "provider API key (sent as a header)")
    provider_timezone: Zone = _setting(
        "SMS_PROVIDER_TIMEZONE", ZoneInfo("Asia/Kolkata"), "provider's wall-clock zone for report dates and times")
    provider_connect_timeout_s: PositiveFloat = _setting("SMS_PROVIDER_CONNECT_TIMEOUT_S", 5.0, "connect time-out")
    provider_read_timeout_s: PositiveFloat = _setting("SMS_PROVIDER_READ_TIMEOUT_S", 30.0, "read time-out")
    provider_xml_send: Annotated[bool, BeforeValidator(_true_or_false)] = _setting(
        "SMS_PROVIDER_XML_SEND", True,
        "true: rows with different bodies share a request (the provider's XML send); false: one request per body")

    @model_validator(mode="after")
    def _lease_outlasts_a_request(self) -> Settings:
        # A request still in flight when the lease runs out would be written `unknown` and its answer lost.
        longest = self.provider_connect_timeout_s + self.provider_read_timeout_s
        if self.claim_lease_s <= longest:
            raise ValueError(f"SMS_PIPELINE_CLAIM_LEASE_S={self.claim_lease_s} must exceed the longest request "
                             f"(SMS_PROVIDER_CONNECT_TIMEOUT_S + SMS_PROVIDER_READ_TIMEOUT_S = {longest:g} s)")
        return self

    @model_validator(mode="after")
    def _shared_text_key(self) -> Settings:
        # Every host that sends or loads reports must fingerprint texts alike: a per-home key cannot be shared.
        if self.database_url is not None and self.text_hmac_key is None:
            raise ValueError("SMS_PIPELINE_TEXT_HMAC_KEY is required when SMS_PIPELINE_DATABASE_URL is set "
                             "(the worker and Dagster must share the text fingerprint key)")
        return self

    @field_validator("alert_webhook_url")
    @classmethod
    def _alert_webhook(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            _http_url(value.get_secret_value())
        return value

    @field_validator("alert_smtp_url")
    @classmethod
    def _smtp_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(("smtp://", "smtps://")):
            raise ValueError("must start with smtp:// or smtps://")
        return value

    @model_validator(mode="after")
    def _mail_needs_recipients(self) -> Settings:
        if self.alert_smtp_url is not None and not self.alert_email_to:
            raise ValueError("SMS_PIPELINE_ALERT_SMTP_URL is set but SMS_PIPELINE_ALERT_EMAIL_TO is not: "
                             "alert mails would go to nobody")
        return self

    @field_validator("webhook_secret")
    @classmethod
    def _url_secret(cls, value: SecretStr | None) -> SecretStr | None:
        # Plain SecretStr (no Annotated wrapper) so that SECRET_VARIABLES below recognises it.
        if value is not None and not _URL_SECRET.fullmatch(value.get_secret_value()):
            raise ValueError("must be at least 16 characters of A-Z, a-z, 0-9 and . _ ~ - "
                             "(e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
        return value

    @model_validator(mode="after")
    def _distinct_push_parameters(self) -> Settings:
        # One name for two fields would read one value as both.
        taken: dict[str, str] = {}
        for field, name in self.webhook_parameters.items():
            if name in taken:
                raise ValueError(f"SMS_PIPELINE_WEBHOOK_PARAM_{field.upper()} and "
                                 f"SMS_PIPELINE_WEBHOOK_PARAM_{taken[name].upper()} name the same parameter {name!r}")
            taken[name] = field
        return self

    @property
    def webhook_parameters(self) -> dict[str, str]:
        """The receipt push's parameter names by field (txn_id, msg_id, mobile, error_code, received_time,
        delivered_time)."""
        return {field: getattr(self, f"webhook_param_{field}") for field in WEBHOOK_FIELDS}

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    @property
    def resend_classes(self) -> tuple[str, ...]:
        """``SMS_PIPELINE_RESEND_AFTER_PROOF`` as a tuple of classes (empty for ``none``)."""
        return resend_classes(self.resend_after_proof)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment only (the one ``load`` was given): no .env file, no secrets folder.
        return init_settings, _Environment(settings_cls)


_ENVIRON: ContextVar[Mapping[str, str] | None] = ContextVar("sms_pipeline_settings_environ", default=None)


class _Environment(EnvSettingsSource):
    """pydantic-settings' environment source over the mapping :func:`load` reads (``os.environ`` by default)."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        environ = _ENVIRON.get()
        env = os.environ if environ is None else environ
        return {name: value.strip() for name, value in env.items() if value != ""}


@contextmanager
def _reading(environ: Mapping[str, str]) -> Iterator[None]:
    token = _ENVIRON.set(environ)
    try:
        yield
    finally:
        _ENVIRON.reset(token)


# Every declared variable, and those whose values are never shown.
VARIABLES = frozenset(str(f.validation_alias) for f in Settings.model_fields.values())
SECRET_VARIABLES = frozenset(
    str(f.validation_alias) for f in Settings.model_fields.values()
    if SecretStr in get_args(f.annotation) or not f.repr
)
# Of those, the URLs that carry a password: shown with the password masked, well-formed or not.
URL_VARIABLES = frozenset(
    str(f.validation_alias) for f in Settings.model_fields.values()
    if not f.repr and SecretStr not in get_args(f.annotation)
)


def shown_value(variable: str, raw: str) -> str:
    """How the value of ``variable`` may be printed: a URL with its password masked, another secret not at all."""
    if variable in URL_VARIABLES:
        return mask_url_password(raw)
    if variable in SECRET_VARIABLES:
        return "***"
    return raw


def _shown(default: Any) -> str | None:
    if default is None:
        return None
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, float):
        return f"{default:g}"
    if isinstance(default, date):
        return default.isoformat()
    return str(default)


def describe() -> list[tuple[str, str | None, str]]:
    """(variable, default, meaning) for every setting, for the README and `sms-pipeline settings`."""
    return [(str(f.validation_alias), _shown(f.default), f.description or "") for f in Settings.model_fields.values()]


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and validate settings; raise ``SettingsError`` naming the first bad variable."""
    env = os.environ if environ is None else environ
    unknown = sorted(k for k in env if k.startswith(PREFIXES) and k not in VARIABLES)
    if unknown:
        raise SettingsError(f"unknown setting {unknown[0]} (known: see `sms-pipeline settings`)")
    try:
        with _reading(env):
            return Settings()
    except ValidationError as exc:
        error = exc.errors()[0]
        if not error["loc"]:  # a rule between settings: its message names them
            raise SettingsError(f"inconsistent settings: {error['ctx']['error']}") from None
        variable = str(error["loc"][0])
        raw = env.get(variable, "")
        shown = "***" if variable in SECRET_VARIABLES and variable not in URL_VARIABLES \
            else repr(shown_value(variable, raw.strip()))
        reason = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
        raise SettingsError(f"malformed setting {variable}={shown}: {reason}") from None
