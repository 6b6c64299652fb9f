"""Intake: the one door through which messages enter the outbound table.

:mod:`messages` validates JSONL records into :class:`NewMessage` rows and
enqueues them idempotently (a repeated business event returns the row it
already made); :mod:`otp_requests` holds the fields only an OTP carries
(what its code authorises) and records them beside the message row.
"""

from sms_pipeline.intake.messages import (
    Enqueued,
    FileIntake,
    IntakePolicy,
    NewMessage,
    OtpTooSoon,
    enqueue,
    enqueue_lines,
    new_message,
    parse_line,
    read_jsonl,
    validate_lines,
)

__all__ = ["Enqueued", "FileIntake", "IntakePolicy", "NewMessage", "OtpTooSoon", "enqueue", "enqueue_lines",
           "new_message", "parse_line", "read_jsonl", "validate_lines"]
