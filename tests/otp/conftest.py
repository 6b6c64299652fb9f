"""Fixtures for the OTP tests: a simulator on the test's clock, a real client, an OTP policy."""

from __future__ import annotations

import pytest
from otp_support import TEST_KEY
from simulated_provider import client, clock, simulator  # noqa: F401 - fixtures, used by name

from sms_pipeline.send.otp import OtpPolicy


@pytest.fixture
def policy() -> OtpPolicy:
    return OtpPolicy(code_length=6, code_type="num", expiry_s=300, max_attempts=3, hmac_key=TEST_KEY)
