"""The commands that loop (``worker``, ``reconcile recent``, ``adopt sync``): SIGTERM and SIGINT finish,
then stop; a failed pass is told once per new trouble, and the loop goes on."""

from __future__ import annotations

import logging
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


def report_failed_pass(command: str, exc: Exception, last_error: str | None, log: logging.Logger,
                       expected: tuple[type[BaseException], ...]) -> str:
    """Log a failed pass with its detail and print one line to stderr unless it is ``last_error`` again;
    return the line. An ``expected`` error shows its own last line, anything else only its type."""
    known = isinstance(exc, expected)
    line = (str(exc).strip().splitlines()[-1] if known and str(exc).strip()
            else type(exc).__name__ + ("" if known else " (details in the log)"))
    log.warning("%s: pass failed: %s", command, line, exc_info=True)
    if line != last_error:  # one line per new trouble, not one per pass
        print(f"sms-pipeline: {command}: {line}", file=sys.stderr, flush=True)
    return line
