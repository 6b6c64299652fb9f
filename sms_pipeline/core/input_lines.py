"""Problems with one line of an input file, named by line and field.

Shared by the JSONL intake and the rate-card CSV loader. The problem text
never quotes the offending value: a bad line may hold a recipient number or
a message body, and these messages end up on terminals and in logs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

E = TypeVar("E", bound=StrEnum)
S = TypeVar("S", str, bytes)

# A UTF-8 byte order mark: editors on Windows put one at the start of a file.
_BOM_TEXT = "\ufeff"
_BOM_BYTES = _BOM_TEXT.encode("utf-8")


def without_bom(first_line: S) -> S:
    """The first line of a file without a leading UTF-8 byte order mark (text or bytes)."""
    if isinstance(first_line, bytes):
        return first_line.removeprefix(_BOM_BYTES)
    return first_line.removeprefix(_BOM_TEXT)


class InvalidField(ValueError):
    """One field of one record is missing or malformed."""

    def __init__(self, field: str | None, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem


# Text Postgres cannot store (NUL) or Python cannot encode as UTF-8 (a lone
# surrogate, which JSON's "\\ud800" escape yields), and control characters (C0, DEL, C1).
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def text_problem(value: str, *, allowed_controls: str = "") -> str | None:
    """Why ``value`` is not text we accept (None when it is); names the character, never the value.

    ``allowed_controls``: control characters this field may hold (a message
    body: newline, carriage return and tab).
    """
    if _SURROGATE.search(value):
        return "contains a lone surrogate (e.g. \\ud800): not valid Unicode text"
    for match in _CONTROL.finditer(value):
        char = match.group()
        if char == "\x00":
            return "contains a NUL character (\\u0000)"
        if char not in allowed_controls:
            allowed = ""
            if allowed_controls:
                allowed = "; only " + ", ".join(_CONTROL_NAMES.get(c, f"U+{ord(c):04X}") for c in allowed_controls) \
                    + " are allowed"
            return f"contains a control character (U+{ord(char):04X}){allowed}"
    return None


_CONTROL_NAMES = {"\n": "newline", "\r": "carriage return", "\t": "tab"}


def member(vocabulary: type[E], value: str | None, field: str) -> E:
    """``value`` as a member of a closed vocabulary, or InvalidField listing the allowed values."""
    try:
        return vocabulary(value)
    except ValueError:
        allowed = ", ".join(m.value for m in vocabulary)
        raise InvalidField(field, f"unknown value (allowed: {allowed})") from None


@dataclass(frozen=True, slots=True)
class BadLine:
    """A refused input line: where, which field, and what is wrong with it."""

    line_no: int
    field: str | None
    problem: str

    @classmethod
    def from_error(cls, line_no: int, error: InvalidField) -> BadLine:
        return cls(line_no, error.field, error.problem)

    def __str__(self) -> str:
        where = f"line {self.line_no}"
        return f"{where}: {self.field}: {self.problem}" if self.field else f"{where}: {self.problem}"
