"""What an OTP is for: the ``purpose`` and ``session_binding`` fields of intake.

An OTP send request carries, besides the usual fields, the ``purpose`` its
code will authorise (``login``, ``payment``, ...; required) and optionally a
``session_binding``: an opaque identifier of the session that asked for the
code (not the session's secret; it is stored as given). Intake validates
them here and records them in ``msg.otp_request`` in the same transaction as
the message row; the send copies them into the verification row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

import psycopg

from sms_pipeline.core.states import MessageClass
from sms_pipeline.db import queries
from sms_pipeline.core.input_lines import InvalidField

FIELDS = ("purpose", "session_binding")
MAX_PURPOSE_LENGTH = 64
MAX_SESSION_BINDING_LENGTH = 256


def _optional_text(record: Mapping[str, object], name: str, max_length: int) -> str | None:
    value = record.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidField(name, "must be a string")
    if not value.strip():
        raise InvalidField(name, "must not be empty")
    if len(value) > max_length:
        raise InvalidField(name, f"must be at most {max_length} characters")
    if any(not ch.isprintable() for ch in value):
        raise InvalidField(name, "must not contain control characters")
    return value


def request_fields(record: Mapping[str, object], message_class: MessageClass) -> tuple[str | None, str | None]:
    """(purpose, session binding) of one intake record; refuses them on non-OTP messages."""
    purpose = _optional_text(record, "purpose", MAX_PURPOSE_LENGTH)
    session_binding = _optional_text(record, "session_binding", MAX_SESSION_BINDING_LENGTH)
    if message_class is MessageClass.otp:
        if purpose is None:
            raise InvalidField("purpose", "is required for an OTP (what the code authorises, e.g. login)")
        return purpose, session_binding
    for name, value in (("purpose", purpose), ("session_binding", session_binding)):
        if value is not None:
            raise InvalidField(name, "only OTP messages have one")
    return None, None


class OtpIntake(Protocol):
    """The OTP fields a :class:`~sms_pipeline.intake.messages.NewMessage` carries."""

    otp_purpose: str | None
    otp_session_binding: str | None


def record_requests(conn: psycopg.Connection, messages: Sequence[OtpIntake],
                    resolved: Sequence[tuple[int, int, datetime]]) -> int:
    """Write the OTP requests of an intake batch (inside its transaction); returns how many were new.

    ``resolved`` is (position in ``messages``, message id, created_at) for
    every request; a message named twice keeps its first line's fields.
    """
    by_message: dict[tuple[int, datetime], OtpIntake] = {}
    for position, message_id, created_at in resolved:
        message = messages[position]
        if message.otp_purpose is not None:
            by_message.setdefault((message_id, created_at), message)
    if not by_message:
        return 0
    keys = list(by_message)
    cursor = queries.run(
        conn, "otp_record_requests",
        ids=[message_id for message_id, _ in keys],
        created_ats=[created_at for _, created_at in keys],
        purposes=[by_message[key].otp_purpose for key in keys],
        session_bindings=[by_message[key].otp_session_binding for key in keys],
    )
    return cursor.rowcount
