"""The OTP tests' policy: short codes, fixed HMAC keys (codes, texts), three guesses."""

import pytest

from sms_pipeline.send.otp import OtpPolicy
from tests.support.otp import TEST_KEY
from tests.support.worker import TEXT_KEY


@pytest.fixture
def policy() -> OtpPolicy:
    return OtpPolicy(code_length=6, code_type="num", expiry_s=300, max_attempts=3, hmac_key=TEST_KEY,
                     text_key=TEXT_KEY)
