"""Run the simulator: uvicorn serving the app, the fault proxy in front of it.

``run_simulator(...)`` starts both in a background thread (one event loop)
on loopback ports and yields their addresses together with the in-process
state, so tests, the demo and benchmarks can read the ledger and share the
application's clock. The CLI runs the same thing in the foreground. A
third thread pushes delivery receipts to a registered webhook (pushes.py).

With a ``state_file`` the simulator starts from the traffic saved there (if
the file exists), saves it every ``save_interval_s`` while anything changed,
and once more when it stops (see statefile.py).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import uvicorn

from sms_pipeline.core.clock import Clock, RealClock
from sms_pipeline.core.redaction import mask_in_loggers
from sms_pipeline.simulator.app import ADMIN_PREFIX, API_PREFIX, create_app
from sms_pipeline.simulator.faults import FaultConfig
from sms_pipeline.simulator.proxy import FaultProxy, listening_socket
from sms_pipeline.simulator.pushes import PushDispatcher
from sms_pipeline.simulator.state import Credentials, SimulatorState

_START_TIMEOUT_S = 15
SAVE_INTERVAL_S = 2.0

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunningSimulator:
    base_url: str  # ends in /SMSApi; goes through the fault proxy
    admin_url: str  # ends in /_sim; straight to the app, never refused
    state: SimulatorState
    clock: Clock
    pushes: PushDispatcher

    @property
    def faults(self) -> FaultConfig:
        return self.state.faults


class _ServerThread(threading.Thread):
    def __init__(self, state: SimulatorState, pushes: PushDispatcher, host: str, port: int, admin_port: int) -> None:
        super().__init__(name="sms-simulator", daemon=True)
        self._state = state
        self._pushes = pushes
        self._host = host
        self._port = port
        self._admin_port = admin_port
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.proxy_port = 0
        self.app_port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to the starting thread
            self.error = exc
            self.ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        app_socket = listening_socket(self._host, self._admin_port)
        self.app_port = app_socket.getsockname()[1]
        proxy = FaultProxy((self._host, self.app_port), self._state.faults, self._state.seed,
                           host=self._host, port=self._port)
        app = create_app(self._state, after_faults_change=proxy.apply, dispatcher=self._pushes)
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off",
                                timeout_keep_alive=60, timeout_graceful_shutdown=2)
        # uvicorn writes access lines whenever its access logger has handlers
        # (pytest's log capture adds some); mask the query-string passwords.
        mask_in_loggers("uvicorn.access")
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve(sockets=[app_socket]))
        self.proxy_port = await proxy.start()
        while not server.started:
            if serving.done():
                serving.result()  # raises the reason uvicorn stopped
            await asyncio.sleep(0.01)
        self.ready.set()
        await self._stop_event.wait()
        await proxy.close()
        server.should_exit = True
        await serving

    def stop(self) -> None:
        if self._loop is not None and self._stop_event is not None and self.is_alive():
            self._loop.call_soon_threadsafe(self._stop_event.set)
        self.join(timeout=10)


class _Autosave(threading.Thread):
    """Saves the state to its file whenever it changed, at most every ``interval_s``; once more at ``stop``.

    A big ledger takes a while to write (about 2 µs a message): the pause
    after a save is at least four times its duration, so saving never takes
    more than a fifth of the time.
    """

    def __init__(self, state: SimulatorState, path: Path, interval_s: float) -> None:
        super().__init__(name="sms-simulator-autosave", daemon=True)
        self._state, self._path, self._interval_s = state, path, interval_s
        self._stopping = threading.Event()
        self._saved = state.changes() if path.exists() else None  # a new file is written at once

    def run(self) -> None:
        while True:
            started = time.monotonic()
            try:
                self._save_if_changed()
            except (OSError, ValueError) as exc:  # the next round tries again; the message names no content
                log.warning("simulator state not saved to %s: %s", self._path,
                            getattr(exc, "strerror", None) or type(exc).__name__)
            if self._stopping.wait(max(self._interval_s, 4 * (time.monotonic() - started))):
                return

    def _save_if_changed(self) -> None:
        if self._state.changes() != self._saved:
            self._saved = self._state.save(self._path)

    def stop(self) -> None:
        """Stop saving in the background, then save what changed since (errors are the caller's)."""
        self._stopping.set()
        self.join(timeout=60)
        self._save_if_changed()


@contextmanager
def run_simulator(
    *,
    clock: Clock | None = None,
    seed: int = 0,
    timezone: ZoneInfo | str = "Asia/Kolkata",
    faults: FaultConfig | Mapping[str, float | int] | None = None,
    userid: str = "demo",
    password: str = "demo",
    api_key: str = "demo-key",
    host: str = "127.0.0.1",
    port: int = 0,
    admin_port: int = 0,
    state_file: Path | str | None = None,
    save_interval_s: float = SAVE_INTERVAL_S,
    **state_options: Any,
) -> Iterator[RunningSimulator]:
    """Serve a simulator on ``host`` until the block ends (port 0: any free port).

    ``clock`` defaults to real time; pass the application's VirtualClock to
    share it. ``state_options`` go to :class:`SimulatorState` (e.g.
    ``otp_retry_after_s``, ``mobile_patterns``). ``state_file``: start from
    the traffic saved there when it exists (its seed and time zone must be
    these; ``statefile.StateFileError`` otherwise) and keep it saved there.
    """
    fault_config = faults if isinstance(faults, FaultConfig) else FaultConfig(faults)
    state = SimulatorState(clock=clock or RealClock(), seed=seed, timezone=timezone,
                           credentials=Credentials(userid, password, api_key), faults=fault_config,
                           **state_options)
    pushes = PushDispatcher(state)  # before a restore, which queues the saved registration's pushes again
    autosave = None
    if state_file is not None:
        state_file = Path(state_file)
        if state_file.exists():
            state.restore(state_file)
        autosave = _Autosave(state, state_file, save_interval_s)
    thread = _ServerThread(state, pushes, host, port, admin_port)
    thread.start()
    if not thread.ready.wait(_START_TIMEOUT_S) or thread.error is not None:
        thread.stop()
        pushes.stop()
        raise RuntimeError(f"simulator did not start: {thread.error!r}")
    pushes.start()
    if autosave is not None:
        autosave.start()
    try:
        yield RunningSimulator(
            base_url=f"http://{host}:{thread.proxy_port}{API_PREFIX}",
            admin_url=f"http://{host}:{thread.app_port}{ADMIN_PREFIX}",
            state=state,
            clock=state.clock,
            pushes=pushes,
        )
    finally:
        pushes.stop()
        thread.stop()
        if autosave is not None:
            autosave.stop()
