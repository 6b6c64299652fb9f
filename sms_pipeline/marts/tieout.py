"""The provider tie-out's differences: which day and sender id disagree with the provider, by how much."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import psycopg
from psycopg.rows import class_row

from sms_pipeline.db import queries


@dataclass(frozen=True)
class TieoutDifference:
    day: date
    sender_id: str
    our_units: int
    provider_units: int
    difference: int  # provider_units - our_units: positive when the provider billed more


def differences(conn: psycopg.Connection, first: date, last: date) -> list[TieoutDifference]:
    """The non-zero differences of days ``first..last`` (days not fetched compare nothing)."""
    with conn.cursor(row_factory=class_row(TieoutDifference)) as cur:
        return queries.run(cur, "marts_tieout_differences", first=first, last=last).fetchall()
