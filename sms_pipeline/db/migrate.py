"""A tiny migration runner for plain SQL files in ``sql/``.

Versioned migrations ``V<n>__<what>.sql`` run once each, in version order.
Each runs in its own transaction and is recorded with its SHA-256
(``public.schema_migrations``); a file whose checksum differs from the
recorded one is refused (an applied migration is history, change it with a
new file).

Repeatable migrations ``R__<what>.sql`` hold the live definition of
functions (trigger functions included) and views: ``CREATE OR REPLACE``
statements, one place to read and edit each body. After every pending V file
they run in name order, each in its own transaction, whenever their content
differs from the recorded one (``public.schema_repeatables``): a new or
edited R file is applied, an unchanged one is not. A failing one is rolled
back and reported; those before it stay applied. Rules that follow from the
order: an R file may only replace what V files created (tables, types,
triggers stay in V files); a V file must not depend on an R file's newer
body (on a fresh database V files run first, against the bodies of older V
files); to retire a function, drop it in a V file and remove it from its
R file.

An advisory lock makes concurrent upgrades (several processes starting at
once) safe. The bookkeeping tables and their statements are the runner's
own, kept here rather than in ``sql/queries``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg

from sms_pipeline import package_files
from sms_pipeline.errors import MigrationError

SQL_DIR = package_files.sql_dir()
_NAME = re.compile(r"^V(\d+)__([a-z0-9_]+)\.sql$")
_REPEATABLE_NAME = re.compile(r"^R__([a-z0-9_]+)\.sql$")
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

    @property
    def label(self) -> str:
        return f"V{self.version} {self.name}"


@dataclass(frozen=True)
class Repeatable:
    """``R__<name>.sql``: re-applied whenever its content changes."""

    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()

    @property
    def label(self) -> str:
        return f"R {self.name}"


@dataclass(frozen=True)
class Applied:
    version: int
    name: str
    checksum: str
    applied_at: datetime


@dataclass(frozen=True)
class AppliedRepeatable:
    name: str
    checksum: str  # of the content last applied
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
    if not found:
        # An install without its sql/ must not report "up to date" on an empty database.
        raise MigrationError(f"no migrations (V<n>__<what>.sql) found in {sql_dir}; "
                             "is sms-pipeline installed with its sql files?")
    return [found[v] for v in sorted(found)]


def discover_repeatables(sql_dir: Path = SQL_DIR) -> list[Repeatable]:
    """The repeatable migrations, in the order they are applied (by name)."""
    found: list[Repeatable] = []
    for path in sorted(sql_dir.glob("R*.sql")):
        match = _REPEATABLE_NAME.match(path.name)
        if not match:
            raise MigrationError(f"repeatable migration file {path.name} does not match R__<what>.sql")
        found.append(Repeatable(match.group(1), path))
    return found


def fingerprint(sql_dir: Path = SQL_DIR) -> str:
    """One hash over every migration, repeatables included, e.g. to name a migrated template database."""
    digest = hashlib.sha256()
    for m in discover(sql_dir):
        digest.update(f"{m.version}:{m.checksum};".encode())
    for r in discover_repeatables(sql_dir):
        digest.update(f"R:{r.name}:{r.checksum};".encode())
    return digest.hexdigest()


_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS public.schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""

_CREATE_REPEATABLES_TABLE = """
CREATE TABLE IF NOT EXISTS public.schema_repeatables (
    name        TEXT PRIMARY KEY,
    checksum    TEXT NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""

_RECORD_REPEATABLE = """
INSERT INTO public.schema_repeatables (name, checksum) VALUES (%s, %s)
ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()
"""


def applied(conn: psycopg.Connection) -> list[Applied]:
    exists = conn.execute("SELECT to_regclass('public.schema_migrations')").fetchone()[0]
    if exists is None:
        return []
    rows = conn.execute(
        "SELECT version, name, checksum, applied_at FROM public.schema_migrations ORDER BY version"
    ).fetchall()
    return [Applied(*row) for row in rows]


def applied_repeatables(conn: psycopg.Connection) -> list[AppliedRepeatable]:
    exists = conn.execute("SELECT to_regclass('public.schema_repeatables')").fetchone()[0]
    if exists is None:
        return []
    rows = conn.execute("SELECT name, checksum, applied_at FROM public.schema_repeatables ORDER BY name").fetchall()
    return [AppliedRepeatable(*row) for row in rows]


def upgrade(conn: psycopg.Connection, sql_dir: Path = SQL_DIR) -> list[Migration | Repeatable]:
    """Apply every pending migration in order, then every new or changed repeatable; return what ran now."""
    migrations = discover(sql_dir)
    repeatables = discover_repeatables(sql_dir)
    done_now: list[Migration | Repeatable] = []
    conn.autocommit = True
    conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
    try:
        conn.execute(_CREATE_TABLE)
        conn.execute(_CREATE_REPEATABLES_TABLE)
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
            # Checked before the repeatables: older code must not put back older bodies.
            raise MigrationError(f"the database has migration V{unknown[0]} that is not in {sql_dir}")
        done_now += _apply_repeatables(conn, repeatables)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return done_now


def _apply_repeatables(conn: psycopg.Connection, repeatables: list[Repeatable]) -> list[Repeatable]:
    """Each repeatable whose content differs from the recorded one, in its own transaction."""
    recorded = {a.name: a.checksum for a in applied_repeatables(conn)}
    done: list[Repeatable] = []
    for r in repeatables:
        checksum = r.checksum
        if recorded.get(r.name) == checksum:
            continue
        try:
            with conn.transaction():
                conn.execute(r.sql)
                conn.execute(_RECORD_REPEATABLE, (r.name, checksum))
        except psycopg.Error as exc:
            reason = exc.diag.message_primary or str(exc).strip() or type(exc).__name__
            raise MigrationError(
                f"repeatable migration {r.path.name} failed and was rolled back "
                f"(SQLSTATE {exc.sqlstate}: {reason}); the ones before it stay applied"
            ) from exc
        done.append(r)
    return done
