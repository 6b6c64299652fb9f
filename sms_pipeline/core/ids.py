"""Provider identifiers and millisecond epochs, cleaned in exactly one place.

Provider ids (msgId, transactionId, uuId, campaign ids) are opaque strings:
they can exceed 2**63 and carry leading zeros, so they are never turned into
numbers. The provider also uses placeholder values ("0" for "no transaction",
"0" for "never") that must become ``None`` before anything is stored.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta

# Exactly the placeholders the database check constraints reject as well.
SENTINELS: frozenset[str] = frozenset({"", "0", "null", "NULL", "-"})

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class InvalidIdentifier(ValueError):
    """A provider id that is neither a sentinel nor a well-formed opaque string."""


class InvalidTimestamp(ValueError):
    """A millisecond-epoch field that is neither a sentinel nor digits."""


def _as_text(value: object, error: type[ValueError], what: str) -> str | None:
    """Return the stripped text of a str/int field, or None for a sentinel."""
    if value is None:
        return None
    # bool is an int subclass; True would silently become the id "True".
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise error(f"{what} must be a string, got {type(value).__name__}: {value!r}")
    text = str(value).strip()
    return None if text in SENTINELS else text


def clean_id(value: object) -> str | None:
    """Normalise a provider identifier: sentinel -> None, else the stripped text.

    The text is returned unchanged otherwise (no int() round trip, leading
    zeros kept). Inner whitespace or control characters mean the field was
    mangled upstream, so they raise :class:`InvalidIdentifier`.
    """
    text = _as_text(value, InvalidIdentifier, "provider id")
    if text is None:
        return None
    # Printable ASCII without a space contains no whitespace or control character: the common case,
    # answered by three string methods in C. Anything else is looked at character by character.
    clean_ascii = text.isascii() and text.isprintable() and " " not in text
    if not clean_ascii and any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in text):
        raise InvalidIdentifier(f"provider id contains whitespace or control characters: {value!r}")
    return text


def clean_epoch_ms(value: object) -> datetime | None:
    """Convert a millisecond-epoch string to an aware UTC datetime.

    ``"0"`` means "never", not 1970, so sentinels give None. Integer
    arithmetic keeps the millisecond exact (no float division).
    """
    text = _as_text(value, InvalidTimestamp, "millisecond epoch")
    if text is None:
        return None
    # isascii(): str.isdigit() also accepts e.g. Arabic-Indic digits.
    if not (text.isascii() and text.isdigit()):
        raise InvalidTimestamp(f"millisecond epoch is not a non-negative integer: {value!r}")
    try:
        return _EPOCH + timedelta(milliseconds=int(text))
    except OverflowError:
        raise InvalidTimestamp(f"millisecond epoch out of range: {value!r}") from None
