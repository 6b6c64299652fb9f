"""A tiny migration runner for plain SQL files in ``sql/``.

Versioned migrations ``V<n>__<what>.sql`` run once each, in version order.
Each runs in its own transaction and is recorded with its SHA-256
(``public.schema_migrations``); a file whose checksum differs from the
recorded one is refused (an applied migration is history, change it with a
new file). Tables, types, indexes and data changes are V files' work.

Repeatable migrations ``R__<what>.sql`` hold the live definition of
functions, of the triggers that fire them (each next to its function) and of
views, so that each live body is in one file, in idempotent form:
``CREATE OR REPLACE FUNCTION | TRIGGER | VIEW``, and for a constraint
trigger (which has no ``OR REPLACE``) ``DROP TRIGGER IF EXISTS`` then
``CREATE CONSTRAINT TRIGGER``. After the pending V files they run in name
order, each in its own transaction with ``check_function_bodies`` off,
whenever their content differs from the recorded one
(``public.schema_repeatables``): a new or edited R file is applied, an
unchanged one is not. Except after a V file: one may drop or replace what an
R file defines (``DROP FUNCTION ... CASCADE`` takes the function's triggers
along), so applying a V file forgets the record of every R file in its own
transaction, and all of them are applied again, even by the next upgrade
when this one stops before them. A failing R file is rolled back and
reported; those before it stay applied.

Rules that follow from the order: an R file defines only what works on the
tables and types that V files made; a V file must not depend on an R file's
newer body (on a fresh database V files run first, against the bodies of
older V files); to retire a function or a trigger, drop it in a V file and
remove it from its R file in the same release (else the R file puts it
back). With body checks off, the name order of R files does not matter for
PL/pgSQL functions and SQL functions with a quoted body; SQL-standard bodies
(``RETURN ...``, ``BEGIN ATOMIC``), views and triggers are still resolved
when created, so what they name must exist by then (made by a V file, or by
an R file earlier in name order).

Rolling deploys: an upgrade applies the R files it carries whenever their
content differs from the recorded one, whichever is newer. An older release
that upgrades a database a newer one has migrated (the CLI's commands and
the demo upgrade when they start) puts its older R bodies back, unless the
database holds a V file it does not know (then it is refused). So migrations
are deployed from the newest release only: run ``sms-pipeline db upgrade``
from it once no instance of an older release will start again.

An advisory lock makes concurrent upgrades (several processes starting at
once) safe. The bookkeeping statements are named queries like every other
(``sql/queries/migrations_*.sql``, run by :mod:`sms_pipeline.db.queries`);
they are the project's own whatever folder the migrations are read from.
See docs/design.md#migrations.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg

from sms_pipeline import package_files
from sms_pipeline.db import queries
from sms_pipeline.errors import MigrationError

SQL_DIR = package_files.sql_dir()
_NAME = re.compile(r"^V(\d+)__([a-z0-9_]+)\.sql$")
_REPEATABLE_NAME = re.compile(r"^R__([a-z0-9_]+)\.sql$")
_LOCK_KEY = 0x5A5_0001  # arbitrary, constant: "sms-pipeline migrations"


@dataclass(frozen=True)
class SqlFile:
    """A migration file of ``sql/``: its text, the checksum recorded when it is applied, a label."""

    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()

    @property
    def prefix(self) -> str:
        raise NotImplementedError

    @property
    def label(self) -> str:
        return f"{self.prefix} {self.name}"


@dataclass(frozen=True)
class Migration(SqlFile):
    """``V<version>__<name>.sql``: applied once, never changed afterwards."""

    version: int

    @property
    def prefix(self) -> str:
        return f"V{self.version}"


@dataclass(frozen=True)
class Repeatable(SqlFile):
    """``R__<name>.sql``: re-applied whenever its content changes, and after any V file."""

    @property
    def prefix(self) -> str:
        return "R"


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
        found[version] = Migration(name=match.group(2), path=path, version=version)
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
        found.append(Repeatable(name=match.group(1), path=path))
    return found


def fingerprint(sql_dir: Path = SQL_DIR) -> str:
    """One hash over every migration, repeatables included, e.g. to name a migrated template database."""
    digest = hashlib.sha256()
    for m in discover(sql_dir):
        digest.update(f"{m.version}:{m.checksum};".encode())
    for r in discover_repeatables(sql_dir):
        digest.update(f"R:{r.name}:{r.checksum};".encode())
    return digest.hexdigest()


def applied(conn: psycopg.Connection) -> list[Applied]:
    if not queries.scalar(conn, "migrations_table_exists", relation="public.schema_migrations"):
        return []
    return [Applied(*row) for row in queries.run(conn, "migrations_applied").fetchall()]


def applied_repeatables(conn: psycopg.Connection) -> list[AppliedRepeatable]:
    if not queries.scalar(conn, "migrations_table_exists", relation="public.schema_repeatables"):
        return []
    return [AppliedRepeatable(*row) for row in queries.run(conn, "migrations_applied_repeatables").fetchall()]


def upgrade(conn: psycopg.Connection, sql_dir: Path = SQL_DIR) -> list[Migration | Repeatable]:
    """Apply every pending migration in order, then the repeatables that need it; return what ran now."""
    migrations = discover(sql_dir)
    repeatables = discover_repeatables(sql_dir)
    done_now: list[Migration | Repeatable] = []
    conn.autocommit = True
    queries.run(conn, "migrations_lock", key=_LOCK_KEY)
    try:
        queries.run(conn, "migrations_create_versioned_table")
        queries.run(conn, "migrations_create_repeatables_table")
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
                queries.run_script(conn, m.sql)
                queries.run(conn, "migrations_record", version=m.version, name=m.name, checksum=m.checksum)
                # Every R file again after it: it may have dropped what one defines.
                queries.run(conn, "migrations_forget_repeatables")
            done_now.append(m)
        unknown = sorted(set(recorded) - {m.version for m in migrations})
        if unknown:
            # Checked before the repeatables: older code must not put back older bodies.
            raise MigrationError(f"the database has migration V{unknown[0]} that is not in {sql_dir}")
        done_now += _apply_repeatables(conn, repeatables)
    finally:
        queries.run(conn, "migrations_unlock", key=_LOCK_KEY)
    return done_now


def _apply_repeatables(conn: psycopg.Connection, repeatables: list[Repeatable]) -> list[Repeatable]:
    """Each repeatable whose content differs from the recorded one (or has none), in its own transaction."""
    recorded = {a.name: a.checksum for a in applied_repeatables(conn)}
    done: list[Repeatable] = []
    for r in repeatables:
        checksum = r.checksum
        if recorded.get(r.name) == checksum:
            continue
        try:
            with conn.transaction():
                # Bodies unchecked: one R file may call what a later one defines.
                queries.run(conn, "migrations_unchecked_function_bodies")
                queries.run_script(conn, r.sql)
                queries.run(conn, "migrations_record_repeatable", name=r.name, checksum=checksum)
        except psycopg.Error as exc:
            reason = exc.diag.message_primary or str(exc).strip() or type(exc).__name__
            raise MigrationError(
                f"repeatable migration {r.path.name} failed and was rolled back "
                f"(SQLSTATE {exc.sqlstate}: {reason}); the ones before it stay applied"
            ) from exc
        done.append(r)
    return done
