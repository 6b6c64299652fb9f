"""OTP bodies: the stored body is the template; the code never is."""

from __future__ import annotations

from sms_pipeline.core.segments import SegmentCount, count_segments

PLACEHOLDER_OTP = "$otp$"


class MissingPlaceholder(ValueError):
    """An OTP template without the ``$otp$`` placeholder."""


def render(template: str, code: str) -> str:
    """Substitute ``code`` for every placeholder, as the provider does."""
    if PLACEHOLDER_OTP not in template:
        raise MissingPlaceholder(f"OTP template has no {PLACEHOLDER_OTP} placeholder: {template!r}")
    if not code:
        raise ValueError("OTP code is empty")
    return template.replace(PLACEHOLDER_OTP, code)


def otp_segments(template: str, code_length: int) -> SegmentCount:
    """Segments of the rendered message, counted without knowing the code.

    Any digit (or ASCII letter, for alphanumeric codes) is one GSM-7 septet,
    so a string of zeros of the same length gives the billed count.
    """
    if code_length < 1:
        raise ValueError(f"code_length must be positive, got {code_length}")
    return count_segments(render(template, "0" * code_length))
