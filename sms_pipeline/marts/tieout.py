"""Reading ``marts.provider_tieout_daily``: the itemised tie-out per day and sender id (docs/design.md#tie-out).

provider_units - our_units = units_differ_units + provider_only_units
- ours_only_units + ambiguous_units + summary_minus_report_units + residual.
A non-zero residual is a difference nobody can explain; anything else that
differs is explained by its buckets or by the provider's summary disagreeing
with its own day report. Figures of a side that was not fetched are None,
never 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

import psycopg

from sms_pipeline.marts.reading import mart_rows

OK, EXPLAINED, MISMATCH = "ok", "explained", "mismatch"
NOT_COMPARED = ("summary_not_fetched", "day_report_not_loaded")


@dataclass(frozen=True)
class TieoutRow:
    day: date
    sender_id: str | None
    status: str  # ok, explained, mismatch, summary_not_fetched or day_report_not_loaded
    provider_units: int | None  # the provider's /report/summary
    day_report_units: int | None
    our_units: int
    difference: int | None  # provider_units - our_units
    matched_messages: int | None
    matched_units: int | None
    units_differ_messages: int | None
    units_differ_units: int | None  # signed: provider - ours
    provider_only_messages: int | None
    provider_only_units: int | None
    ours_only_messages: int | None
    ours_only_units: int | None
    ambiguous_provider_messages: int | None
    ambiguous_our_messages: int | None
    ambiguous_units: int | None  # signed: provider - ours
    summary_minus_report_units: int | None
    residual: int | None
    unplaced_messages: int | None  # report messages nobody can place (a mismatch even when residual is 0)
    unknown_units: int
    unpriced_units: int


def rows(conn: psycopg.Connection, first: date, last: date) -> list[TieoutRow]:
    """Every tie-out row of days ``first``..``last`` (inclusive)."""
    return mart_rows(conn, "provider_tieout_daily", "marts_tieout_rows", TieoutRow, first, last)


def has_mismatch(found: Iterable[TieoutRow]) -> bool:
    """Whether any row holds units or messages nobody can place (the check's ERROR)."""
    return any(r.status == MISMATCH for r in found)


def day_label(day_rows: list[TieoutRow]) -> str:
    """One day's tie-out for a person: ``ok``, ``explained (provider-only 3, ours-only 2)``,
    ``MISMATCH (residual N)`` or ``not compared (...)``.

    Explained parts count messages (a pair, for units differ; provider
    messages/our rows, for ambiguous); the residual is the units nobody can
    place, summed over the day's sender ids whatever their sign (two
    senders' +2 and -2 are no tie-out).
    """
    if not day_rows:
        return "no data"
    if any(r.status == MISMATCH for r in day_rows):
        unplaced = sum(r.unplaced_messages or 0 for r in day_rows)
        return (f"MISMATCH (residual {sum(abs(r.residual or 0) for r in day_rows)}"
                + (f", {unplaced} unplaced" if unplaced else "") + ")")
    missing = sorted({r.status.replace("_", " ") for r in day_rows if r.status in NOT_COMPARED})
    if missing:
        return f"not compared ({', '.join(missing)})"
    counts = {
        "units differ": sum(r.units_differ_messages or 0 for r in day_rows),
        "provider-only": sum(r.provider_only_messages or 0 for r in day_rows),
        "ours-only": sum(r.ours_only_messages or 0 for r in day_rows),
    }
    explained = [f"{name} {count}" for name, count in counts.items() if count]
    theirs = sum(r.ambiguous_provider_messages or 0 for r in day_rows)
    ours = sum(r.ambiguous_our_messages or 0 for r in day_rows)
    if theirs or ours:
        explained.append(f"ambiguous {theirs}/{ours}")
    summary_gaps = [f"{r.summary_minus_report_units:+d}" for r in day_rows if r.summary_minus_report_units]
    if summary_gaps:  # per sender id: +3 and -3 are two disagreements, not none
        explained.append(f"summary - day report {' '.join(summary_gaps)}")
    return f"explained ({', '.join(explained)})" if explained else OK


def day_labels(found: list[TieoutRow]) -> dict[date, str]:
    """:func:`day_label` of each day that has tie-out rows."""
    by_day: dict[date, list[TieoutRow]] = {}
    for row in found:
        by_day.setdefault(row.day, []).append(row)
    return {day: day_label(day_rows) for day, day_rows in by_day.items()}
