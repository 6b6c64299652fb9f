"""Stored reports never shrink (issue 17, docs/design.md#report-guards).

A provider's day report, its by-transaction reports and its day summary only
ever grow: statuses move forward, rows and units never go away. A re-fetch
with fewer rows (or units) than what is stored is the provider's fault or
ours (a fresh or wrong account, a glitch), never news to load over good data.
The loaders refuse it with :class:`ReportShrinkRefused` and write nothing,
unless a person allowed it for the run (``allow_shrink``); triggers
(``sql/R__report_guards.sql``) refuse it in the database whatever path wrote
it, unless the transaction ran :func:`allow_shrink`.
"""

from __future__ import annotations

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.errors import UserError

OVERRIDE = (
    "Re-run with --allow-shrink (run config resources: report_guard: config: allow_shrink: true) "
    "once a person has checked"
)


class ReportShrinkRefused(UserError):
    """A re-fetched report is smaller than the stored one; nothing was replaced (one line)."""


def refused(report: str, now: str, stored: str, rule: str) -> ReportShrinkRefused:
    """The refusal, one line: ``report`` names the report and its day, ``now`` and ``stored`` the two sizes
    (``"0 rows"``, ``"1,199 are stored"``), ``rule`` what always holds."""
    return ReportShrinkRefused(f"{report}: the provider now has {now}, {stored}; refused ({rule}). {OVERRIDE}")


def amount(n: int, noun: str) -> str:
    """``1,199 rows``, ``1 row``."""
    return f"{n:,} {noun if n == 1 else noun + 's'}"


def are_stored(n: int, noun: str | None = None) -> str:
    """``1,199 are stored``, ``1 is stored``; with ``noun``: ``1,199 rows are stored``."""
    return f"{amount(n, noun) if noun else f'{n:,}'} {'is' if n == 1 else 'are'} stored"


def allow_shrink(conn: psycopg.Connection) -> None:
    """Let the current transaction replace stored reports with smaller ones (the database guards)."""
    queries.run(conn, "report_guard_allow_shrink")
