"""The OTP tests' policy: short codes, a fixed HMAC key, three guesses."""

import pytest

from sms_pipeline.send.otp import OtpPolicy
from tests.support.otp import TEST_KEY


@pytest.fixture
def policy() -> OtpPolicy:
    return OtpPolicy(code_length=6, code_type="num", expiry_s=300, max_attempts=3, hmac_key=TEST_KEY)
