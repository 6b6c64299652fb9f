"""SIGTERM and SIGINT for the commands that loop (``worker``, ``reconcile recent``): finish, then stop."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def stop_on_signals(stop: Callable[[], None], finishing: str) -> Iterator[None]:
    """While the block runs, SIGTERM/SIGINT print one line (``finishing``: what still completes) and call
    ``stop`` instead of interrupting: the work in progress ends cleanly, then the command returns."""
    def handler(signum: int, _frame: object) -> None:
        print(f"sms-pipeline: {signal.Signals(signum).name}: {finishing}", file=sys.stderr)
        stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
