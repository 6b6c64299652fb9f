"""The provider client's tests: a fixed start, a seeded simulator, an account whose secrets must never leak."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.support.provider import Account

ACCOUNT = Account("demo", "pw-Zq81-never-logged", "key-Hh27-never-logged", ZoneInfo("Asia/Kolkata"))


@pytest.fixture
def account() -> Account:
    return ACCOUNT


@pytest.fixture
def reproducible() -> bool:
    return True


@pytest.fixture
def client_options() -> dict[str, Any]:
    """Short time-outs, no pacing and quick retries: the fault tests wait on them."""
    return dict(connect_timeout=1.0, read_timeout=2.0, requests_per_s=500.0, max_retries=3, backoff_s=0.01)
