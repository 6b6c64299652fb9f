"""The connection dbt uses, derived from the application database's URL.

``dbt_project/profiles.yml`` reads ``DBT_SMS_HOST``, ``DBT_SMS_PORT``,
``DBT_SMS_USER``, ``DBT_SMS_PASSWORD`` and ``DBT_SMS_DBNAME``. They are not
``SMS_PIPELINE_*`` variables: the settings loader refuses unknown ones, and
these are derived from the active DSN, never set by hand. The host may be the
embedded server's Unix-socket directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from psycopg.conninfo import conninfo_to_dict

from sms_pipeline.db import connection
from sms_pipeline.errors import UserError

DBT_ENV_NAMES = ("DBT_SMS_HOST", "DBT_SMS_PORT", "DBT_SMS_USER", "DBT_SMS_PASSWORD", "DBT_SMS_DBNAME")

_PROFILE_PARAMETERS = {"host", "port", "user", "password", "dbname"}
# Connection options the profile has no field for reach libpq (under dbt's
# psycopg2) through its own environment variables. Anything else in the DSN
# would be dropped silently, so it is refused instead.
_LIBPQ_ENV = {
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "application_name": "PGAPPNAME",
    "options": "PGOPTIONS",
}


def dbt_env_for_url(url: str) -> dict[str, str]:
    """The DBT_SMS_* (and libpq PG*) variables for a libpq URL (``postgresql://...``)."""
    params = conninfo_to_dict(url)
    extra = sorted(set(params) - _PROFILE_PARAMETERS - set(_LIBPQ_ENV))
    if extra:
        raise UserError(f"dbt cannot use the database URL {connection.redact(url)}: "
                        f"unsupported parameter(s) {', '.join(extra)}")
    missing = [name for name in ("host", "user", "dbname") if not params.get(name)]
    if missing:
        raise UserError(f"dbt needs {', '.join(missing)} in the database URL {connection.redact(url)}")
    return {
        "DBT_SMS_HOST": str(params["host"]),
        "DBT_SMS_PORT": str(params.get("port") or "5432"),
        "DBT_SMS_USER": str(params["user"]),
        "DBT_SMS_PASSWORD": str(params.get("password") or ""),
        "DBT_SMS_DBNAME": str(params["dbname"]),
        **{env: str(params[name]) for name, env in _LIBPQ_ENV.items() if name in params},
    }


@contextmanager
def dbt_environment(variables: Mapping[str, str]) -> Iterator[None]:
    """Put ``variables`` into ``os.environ`` for the block, then restore what was there.

    dagster-dbt starts dbt with a copy of ``os.environ`` and reads the profile
    in-process too, so the variables must be in the process environment while
    a dbt command starts.
    """
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
