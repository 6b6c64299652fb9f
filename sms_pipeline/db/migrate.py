"""A tiny migration runner for plain SQL files ``sql/V<n>__<what>.sql``.

Each file runs in its own transaction and is recorded with its SHA-256; a
file whose checksum differs from the recorded one is refused (an applied
migration is history, change it with a new file). An advisory lock makes
concurrent upgrades (several processes starting at once) safe.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg

from sms_pipeline.errors import MigrationError

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
_NAME = re.compile(r"^V(\d+)__([a-z0-9_]+)\.sql$")
_LOCK_KEY = 0x5A5_0001  # arbitrary, constant: "sms-pipeline migrations"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Applied:
    version: int
    name: str
    checksum: str
    applied_at: datetime


def discover(sql_dir: Path = SQL_DIR) -> list[Migration]:
    found: dict[int, Migration] = {}
    for path in sorted(sql_dir.glob("V*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise MigrationError(f"migration file {path.name} does not match V<n>__<what>.sql")
        version = int(match.group(1))
        if version in found:
            raise MigrationError(f"two migrations share version {version}: {found[version].path.name}, {path.name}")
        found[version] = Migration(version, match.group(2), path)
    return [found[v] for v in sorted(found)]


def fingerprint(sql_dir: Path = SQL_DIR) -> str:
    """One hash over every migration, e.g. to name a migrated template database."""
    digest = hashlib.sha256()
    for m in discover(sql_dir):
        digest.update(f"{m.version}:{m.checksum};".encode())
    return digest.hexdigest()


_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS public.schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""


def applied(conn: psycopg.Connection) -> list[Applied]:
    exists = conn.execute("SELECT to_regclass('public.schema_migrations')").fetchone()[0]
    if exists is None:
        return []
    rows = conn.execute(
        "SELECT version, name, checksum, applied_at FROM public.schema_migrations ORDER BY version"
    ).fetchall()
    return [Applied(*row) for row in rows]


def upgrade(conn: psycopg.Connection, sql_dir: Path = SQL_DIR) -> list[Migration]:
    """Apply every pending migration in order; return the ones applied now."""
    migrations = discover(sql_dir)
    done_now: list[Migration] = []
    conn.autocommit = True
    conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
    try:
        conn.execute(_CREATE_TABLE)
        recorded = {a.version: a for a in applied(conn)}
        for m in migrations:
            previous = recorded.get(m.version)
            if previous is not None:
                if previous.checksum != m.checksum:
                    raise MigrationError(
                        f"migration V{m.version} ({m.path.name}) changed after it was applied; "
                        "add a new migration instead of editing an applied one"
                    )
                continue
            with conn.transaction():
                conn.execute(m.sql)
                conn.execute(
                    "INSERT INTO public.schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                    (m.version, m.name, m.checksum),
                )
            done_now.append(m)
        unknown = sorted(set(recorded) - {m.version for m in migrations})
        if unknown:
            raise MigrationError(f"the database has migration V{unknown[0]} that is not in {sql_dir}")
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return done_now
