import pytest

from sms_pipeline.core.otp import PLACEHOLDER_OTP, MissingPlaceholder, otp_segments, render
from sms_pipeline.core.segments import SegmentCount, count_segments


def test_render_replaces_placeholder() -> None:
    assert PLACEHOLDER_OTP == "$otp$"
    assert render("Your OTP is $otp$. Valid for 5 minutes.", "123456") == "Your OTP is 123456. Valid for 5 minutes."


def test_render_requires_placeholder_and_code() -> None:
    with pytest.raises(MissingPlaceholder):
        render("no code here", "1234")
    with pytest.raises(ValueError):
        render("code $otp$", "")


def test_segments_counted_on_rendered_length() -> None:
    template = "a" * 154 + PLACEHOLDER_OTP  # 159 as stored, 160 rendered with 6 digits
    assert otp_segments(template, 6) == SegmentCount("GSM7", 160, 1)
    assert otp_segments(template, 7) == SegmentCount("GSM7", 161, 2)
    assert count_segments(template).units == 159


def test_code_length_must_be_positive() -> None:
    with pytest.raises(ValueError):
        otp_segments("$otp$", 0)
