"""A receiver on a fresh database over real HTTP (uvicorn on loopback), and a plain HTTP client for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sms_pipeline.receiver.app import ReceiverConfig
from sms_pipeline.receiver.server import RunningReceiver, run_receiver
from tests.receiver.receiver_support import SECRET
from tests.support.environment import settings_for


@pytest.fixture
def receiver_variables() -> dict[str, str]:
    """More settings the receiver runs with; a test overrides it (e.g. parameter names)."""
    return {}


@pytest.fixture
def receiver_config(db_url: str, tmp_path: Path, receiver_variables: dict[str, str]) -> ReceiverConfig:
    settings = settings_for(db_url, tmp_path / "home", SMS_PIPELINE_WEBHOOK_SECRET=SECRET,
                            SMS_PIPELINE_RECEIVER_POOL_SIZE="4", **receiver_variables)
    # A short wait for a connection: the database-down test waits for its 503s.
    return ReceiverConfig.from_settings(settings, db_url, pool_timeout_s=1.0)


@pytest.fixture
def receiver(receiver_config: ReceiverConfig) -> Iterator[RunningReceiver]:
    with run_receiver(receiver_config) as running:
        yield running


@pytest.fixture
def http(receiver: RunningReceiver) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=receiver.base_url, timeout=10) as client:
        yield client
