"""What a backfill would make of a legacy table, read only (``sms-pipeline adopt inspect``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import psycopg

from sms_pipeline.adopt import legacy
from sms_pipeline.adopt.mapping import ColumnMap
from sms_pipeline.adopt.responses import Outcome, Problem, attempted, outcome, parse_response
from sms_pipeline.core import msisdn

BATCH = 5000


@dataclass
class Inspection:
    legacy_rows: int = 0
    recipients: Counter[str] = field(default_factory=Counter)  # Outcome value or "bad_number" -> recipients
    unsent_rows: int = 0
    comma_lists: int = 0  # legacy rows with more than one number
    problems: Counter[str] = field(default_factory=Counter)  # Problem value -> sent legacy rows
    duplicate_rows: int = 0  # sent legacy rows whose event an earlier sent row already had
    duplicate_events: int = 0  # events sent more than once
    examples: dict[str, int] = field(default_factory=dict)  # Problem value -> a legacy id showing it

    @property
    def mangled(self) -> int:
        return sum(self.problems[p] for p in (Problem.exponent, Problem.digits, Problem.float_rounded))


def inspect_table(conn: psycopg.Connection, columns: ColumnMap) -> Inspection:
    """Read every legacy row once (by primary key, a batch at a time) and classify it as the backfill would."""
    found = Inspection()
    events: Counter[str] = Counter()
    for rows in legacy.batches(conn, columns, after_id=None, since=None, size=BATCH):
        for row in rows:
            found.legacy_rows += 1
            if not attempted(row.sent, row.response):
                found.unsent_rows += 1
                continue
            parsed = parse_response(row.response)
            if parsed.problem is not None:
                found.problems[parsed.problem.value] += 1
                found.examples.setdefault(parsed.problem.value, row.id)
            if row.event:
                events[row.event] += 1
            numbers = [n for n in (row.phone or "").split(",") if n.strip()] or [""]
            found.comma_lists += len(numbers) > 1
            for number in numbers:
                try:
                    recipient = msisdn.normalise_mobile(number)
                except msisdn.InvalidRecipient:
                    found.recipients["bad_number"] += 1
                    continue
                found.recipients[outcome(parsed, row.sent, row.response, recipient).value] += 1
    found.duplicate_events = sum(1 for n in events.values() if n > 1)
    found.duplicate_rows = sum(n - 1 for n in events.values() if n > 1)
    for name in Outcome:
        found.recipients.setdefault(name.value, 0)
    return found
