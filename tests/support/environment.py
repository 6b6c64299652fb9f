"""The environment and settings the application runs with in a test: the process's, minus its own variables."""

from __future__ import annotations

import os
from pathlib import Path

from sms_pipeline import settings as settings_module


def provider_variables(base_url: str, timezone: str = "Asia/Kolkata", *, userid: str = "demo",
                       password: str = "demo") -> dict[str, str]:
    """The variables that point the application at a provider (a simulator's ``base_url``) and its account."""
    return {"SMS_PROVIDER_BASE_URL": base_url, "SMS_PROVIDER_USERID": userid, "SMS_PROVIDER_PASSWORD": password,
            "SMS_PROVIDER_TIMEZONE": timezone}


# The test deployment's first day partition: fixed, so that importing the pipeline (here and in the
# processes tests start) never reads it from a database (docs/design.md#first-partition-day).
PARTITION_START = "2026-01-01"
# The test deployment's text fingerprint key (required with SMS_PIPELINE_DATABASE_URL): the same in every
# process a test starts, and what tests.support.worker's intake fingerprints with.
TEXT_HMAC_KEY = "text-fingerprint-tests-key-0123456789abcdef"


def app_environ(**overrides: str) -> dict[str, str]:
    """A copy of ``os.environ`` without the application's variables (``SMS_PIPELINE_*``, ``SMS_PROVIDER_*``),
    plus the test deployment's ``SMS_PIPELINE_PARTITION_START`` and ``SMS_PIPELINE_TEXT_HMAC_KEY`` and ``overrides``: what the developer's own
    shell sets never leaks into a test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(settings_module.PREFIXES)}
    env["SMS_PIPELINE_PARTITION_START"] = PARTITION_START
    env["SMS_PIPELINE_TEXT_HMAC_KEY"] = TEXT_HMAC_KEY
    env.update(overrides)
    return env


# Loopback's discard port: a test's settings never reach the real provider unless they name one.
UNANSWERED_PROVIDER = "http://127.0.0.1:9/unused"


def settings_for(db_url: str, home: Path, **overrides: str) -> settings_module.Settings:
    """Settings pointing at ``db_url``, with ``home`` as the home folder and a provider nobody answers at;
    ``overrides`` are more variables (or other values for these)."""
    return settings_module.load(app_environ(**{
        "SMS_PIPELINE_HOME": str(home), "SMS_PIPELINE_DATABASE_URL": db_url,
        "SMS_PROVIDER_BASE_URL": UNANSWERED_PROVIDER, **overrides}))
