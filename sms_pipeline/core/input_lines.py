"""Problems with one line of an input file, named by line and field.

Shared by the JSONL intake and the rate-card CSV loader. The problem text
never quotes the offending value: a bad line may hold a recipient number or
a message body, and these messages end up on terminals and in logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

E = TypeVar("E", bound=StrEnum)


class InvalidField(ValueError):
    """One field of one record is missing or malformed."""

    def __init__(self, field: str | None, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem


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
