"""The stored checkpoint of a report load, and when a new download of it is a no-op."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

import psycopg

from sms_pipeline.db import queries


@dataclass(frozen=True)
class Checkpoint:
    checksum: str
    rows: int
    bytes: int
    fetched_at: datetime
    loaded_at: datetime | None
    fingerprint_key_id: str | None  # NULL: loaded before fingerprints

    def unchanged(self, checksum: str, key_id: str) -> bool:
        """A download with ``checksum`` fingerprinted under ``key_id`` would store exactly what is stored:
        the same content, loaded, under the same key (another key's fingerprints must be recomputed)."""
        return self.checksum == checksum and self.loaded_at is not None and self.fingerprint_key_id == key_id


def read(conn: psycopg.Connection, report_kind: str, report_date: date) -> Checkpoint | None:
    """The checkpoint of ``report_kind`` for ``report_date``; None: never loaded."""
    row = queries.run(conn, "ingest_report_checkpoint", report_kind=report_kind, report_date=report_date).fetchone()
    return None if row is None else Checkpoint(*row)
