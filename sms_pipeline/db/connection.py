"""Which database to use, and how to connect to it.

``SMS_PIPELINE_DATABASE_URL`` names any server; without it the embedded
server in ``$SMS_PIPELINE_HOME`` is started on demand and its ``sms_pipeline``
database is used. Dagster keeps its own storage in a sibling database on the
same server (``SMS_PIPELINE_DAGSTER_DATABASE``, default ``dagster``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql

from sms_pipeline.core.redaction import mask_url_password
from sms_pipeline.db import embedded, queries
from sms_pipeline.errors import DatabaseUnavailable
from sms_pipeline.settings import Settings

log = logging.getLogger(__name__)

APP_DATABASE = "sms_pipeline"


def with_database(url: str, dbname: str) -> str:
    """The same server and credentials, another database."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + dbname))


def redact(url: str) -> str:
    """A URL safe to print: the password replaced, even in a malformed URL (core.redaction)."""
    return mask_url_password(url)


def sqlalchemy_psycopg2_url(url: str) -> str:
    """The ``postgresql+psycopg2://`` form Dagster's storage needs (docs/design.md#runtime-environment)."""
    parts = urlsplit(url)
    query = urlencode(parse_qsl(parts.query))
    return urlunsplit(parts._replace(scheme="postgresql+psycopg2", query=query))


def server_url(settings: Settings) -> str:
    """A DSN for the maintenance database of the active server (starting it if embedded)."""
    return server_url_for(settings.database_url, settings.home)


def server_url_for(database_url: str | None, home: Path) -> str:
    """:func:`server_url` from the two values it uses: the external URL, else the embedded server in ``home``."""
    if database_url:
        return with_database(database_url, "postgres")
    return embedded.ensure_running(home)


def ensure_database(admin_url: str, dbname: str) -> None:
    """Create ``dbname`` on the server if it does not exist (idempotent)."""
    with connect_url(admin_url, autocommit=True) as conn:
        exists = queries.run(conn, "database_exists", dbname=dbname).fetchone()
        if not exists:
            try:
                queries.run(conn, "create_database", identifiers={"database": sql.Identifier(dbname)})
            except psycopg.errors.DuplicateDatabase:
                pass  # a concurrent command created it first


def app_url(settings: Settings) -> str:
    """The DSN of the application database, created on the embedded server if needed."""
    return app_url_for(settings.database_url, settings.home)


def app_url_for(database_url: str | None, home: Path) -> str:
    """:func:`app_url` from the two values it uses: the external URL, else the embedded server in ``home``."""
    if database_url:
        return database_url
    admin = server_url_for(None, home)
    ensure_database(admin, APP_DATABASE)
    return with_database(admin, APP_DATABASE)


def running_app_url(settings: Settings) -> str:
    """:func:`app_url` without starting or creating anything: the embedded server must already run."""
    if settings.database_url:
        return settings.database_url
    admin = embedded.running_uri(settings.home)
    if admin is None:
        raise DatabaseUnavailable(f"database not running: the embedded Postgres in {settings.home} is stopped "
                                  "(any command that uses the database starts it, e.g. `sms-pipeline db status`)")
    return with_database(admin, APP_DATABASE)


def connect_url(url: str, *, autocommit: bool = False, connect_timeout_s: int = 10) -> psycopg.Connection:
    try:
        return psycopg.connect(url, autocommit=autocommit, connect_timeout=connect_timeout_s)
    except psycopg.OperationalError as exc:
        log.debug("connection failed", exc_info=True)
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise DatabaseUnavailable(f"cannot reach the database at {redact(url)}: {reason}") from exc


def connect(settings: Settings, *, autocommit: bool = False) -> psycopg.Connection:
    return connect_url(app_url(settings), autocommit=autocommit)
