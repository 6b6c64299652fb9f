"""Status words of a raw load, folded into canonical words for the metadata."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from sms_pipeline.core.statuses import STATUS_ALIASES, STATUS_OUTCOMES, normalise_status

_FINAL_OUTCOMES = frozenset({"delivered", "failed", "expired"})


@dataclass(frozen=True)
class StatusCounts:
    by_word: Mapping[str, int]  # canonical word -> rows
    unmapped: Mapping[str, int]  # the words no outcome is known for (kept, never move a state)

    @classmethod
    def fold(cls, raw_counts: Iterable[tuple[str | None, int]]) -> StatusCounts:
        """From (raw word, rows) pairs, e.g. ``SELECT status, count(*) ... GROUP BY status``."""
        by_word: Counter[str] = Counter()
        unmapped: Counter[str] = Counter()
        for raw, rows in raw_counts:
            status = normalise_status(raw)
            by_word[status.word] += rows
            if status.outcome == "unmapped":
                unmapped[status.word] += rows
        return cls(_frozen(by_word), _frozen(unmapped))


def final_status_spellings() -> list[str]:
    """Every upper-case spelling (canonical or alias) whose outcome is final."""
    finals = {word for word, outcome in STATUS_OUTCOMES.items() if outcome in _FINAL_OUTCOMES}
    return sorted(finals | {alias for alias, word in STATUS_ALIASES.items() if word in finals})


def _frozen(counts: Counter[str]) -> Mapping[str, int]:
    return MappingProxyType(dict(sorted(counts.items())))
