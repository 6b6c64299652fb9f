"""What a backfill would make of a legacy table, read only (``sms-pipeline adopt inspect``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import psycopg

from sms_pipeline.adopt import legacy
from sms_pipeline.adopt.backfill import adoptable_recipients
from sms_pipeline.adopt.mapping import ColumnMap
from sms_pipeline.adopt.responses import Outcome, attempted, outcome, parse_response

BATCH = 5000


@dataclass
class Inspection:
    legacy_rows: int = 0
    recipients: Counter[str] = field(default_factory=Counter)  # Outcome value or "refused" -> recipients
    unsent_rows: int = 0
    sent_flag_false_rows: int = 0  # sent = false but a usable id stored: adopted as sent
    undated_rows: int = 0  # sent, created_at NULL: refused
    comma_lists: int = 0  # legacy rows with more than one number
    problems: Counter[str] = field(default_factory=Counter)  # Problem value -> sent legacy rows
    mangled: int = 0  # sent legacy rows whose id lost digits on the way (ParsedResponse.mangled)
    duplicate_recipients: int = 0  # recipients whose event + recipient (the business key) another row has too
    duplicate_events: int = 0  # events with such recipients
    examples: dict[str, int] = field(default_factory=dict)  # Problem value -> a legacy id showing it


def inspect_table(conn: psycopg.Connection, columns: ColumnMap) -> Inspection:
    """Read every legacy row once (by primary key, a batch at a time) and classify it as the backfill would."""
    found = Inspection()
    keys: Counter[tuple[str, str]] = Counter()  # (event, recipient): the backfill's key, less what is fixed
    for rows in legacy.batches(conn, columns, after_id=None, since=None, size=BATCH):
        for row in rows:
            found.legacy_rows += 1
            if not attempted(row.sent, row.response):
                found.unsent_rows += 1
                continue
            found.sent_flag_false_rows += row.sent is False
            if row.created_at is None:
                found.undated_rows += 1
                continue
            parsed = parse_response(row.response)
            if parsed.problem is not None:
                found.problems[parsed.problem.value] += 1
                found.examples.setdefault(parsed.problem.value, row.id)
            found.mangled += parsed.mangled
            written, refused = adoptable_recipients(row)
            found.comma_lists += len(written) + len(refused) > 1
            found.recipients["refused"] += len(refused)
            for recipient in written:
                found.recipients[outcome(parsed, row.sent, row.response, recipient).value] += 1
                if row.event:
                    keys[(row.event, recipient)] += 1
    repeated = {key: n for key, n in keys.items() if n > 1}
    found.duplicate_recipients = sum(n - 1 for n in repeated.values())
    found.duplicate_events = len({event for event, _ in repeated})
    for name in Outcome:
        found.recipients.setdefault(name.value, 0)
    return found
