"""``sms-pipeline simulator``: serve the provider simulator in the foreground.

``--state PATH`` keeps its traffic in a file (sms_pipeline/simulator/statefile.py):
loaded at start when it exists, saved every few seconds while anything
changed and on exit (Ctrl-C, SIGTERM). The file's seed and time zone are the
simulator's unless given (then they must agree), and its report-shaping
faults (duplicated, misfiled, unmapped rows; the summary's units offset)
apply unless a ``--fault`` says otherwise, so its day reports are the same
rows as before the restart; request-level faults are never saved.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sms_pipeline.core.clock import ClockAheadOfRealTime, RealClock, VirtualClock
from sms_pipeline.errors import UserError
from sms_pipeline.settings import Settings
from sms_pipeline.simulator import statefile
from sms_pipeline.simulator.faults import FAULT_NAMES, PARAMETERS, FaultConfig, FaultSpecError, parse_spec
from sms_pipeline.simulator.server import SAVE_INTERVAL_S, run_simulator

# How long a stop signal may wait for the main thread (see serve).
SIGNAL_CHECK_S = 0.2


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "simulator",
        help="run the SMSGatewayCenter simulator (API under /SMSApi, admin under /_sim)",
        description="Serve a simulated provider API until interrupted. Faults: "
                    + ", ".join((*FAULT_NAMES, *PARAMETERS)) + ".",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="API port, behind the fault proxy (0: any free port)")
    parser.add_argument("--admin-port", type=int, default=0,
                        help="port of the app itself, for /_sim (default: any free port)")
    parser.add_argument("--seed", type=int, default=None,
                        help="ids, outcomes and fault draws follow from it (default: the --state file's, else 0)")
    parser.add_argument("--timezone", default=None,
                        help="provider time zone (default: the --state file's, else SMS_PROVIDER_TIMEZONE)")
    parser.add_argument("--state", type=Path, default=None, metavar="PATH",
                        help="keep the traffic (ledger) in this file: loaded at start if it exists, "
                             f"saved every {SAVE_INTERVAL_S:g} s and on exit")
    parser.add_argument("--fault", action="append", default=[], metavar="NAME=RATE",
                        help="fault rate in [0, 1] (or a parameter value); repeatable")
    parser.add_argument("--start", default=None, metavar="ISO_TIME",
                        help="run on a virtual clock starting here (moved via /_sim/clock); default: real time")
    parser.add_argument("--userid", default="demo")
    parser.add_argument("--password", default="demo")
    parser.add_argument("--api-key", default="demo-key")
    parser.set_defaults(handler=serve)


def _faults(specs: list[str], saved: statefile.Header | None, path: Path | None) -> FaultConfig:
    try:
        explicit = dict(parse_spec(spec) for spec in specs)
    except FaultSpecError as exc:
        raise UserError(f"--fault: {exc}") from None
    config = FaultConfig()
    if saved is not None:
        try:
            config.update(saved.report_faults)
        except FaultSpecError as exc:
            raise UserError(f"simulator state {path}: {exc}") from None
    config.update(explicit)
    return config


def _saved_header(path: Path | None) -> statefile.Header | None:
    if path is None:
        return None
    try:
        return statefile.read_header(path)
    except FileNotFoundError:
        return None
    except (OSError, statefile.StateFileError) as exc:
        raise UserError(str(exc) if isinstance(exc, statefile.StateFileError)
                        else f"cannot read the simulator state {path}: {exc.strerror}") from None


def _seed(given: int | None, saved: statefile.Header | None, path: Path | None) -> int:
    if saved is None:
        return 0 if given is None else given
    if given is not None and given != saved.seed:
        raise UserError(f"--seed {given}: the simulator state {path} was saved with seed {saved.seed}")
    return saved.seed


def _timezone(given: str | None, saved: statefile.Header | None, path: Path | None, settings: Settings) -> ZoneInfo:
    name = given or (saved.timezone if saved is not None else None)
    try:
        timezone = ZoneInfo(name) if name else settings.provider_timezone
    except (ZoneInfoNotFoundError, ValueError):
        raise UserError(f"--timezone {name!r} is not an IANA time zone") from None
    if saved is not None and timezone.key != saved.timezone:
        raise UserError(f"--timezone {timezone.key}: the simulator state {path} was saved in {saved.timezone}")
    return timezone


def _clock(start: str | None) -> RealClock | VirtualClock:
    if start is None:
        return RealClock()
    try:
        return VirtualClock(datetime.fromisoformat(start))
    except ClockAheadOfRealTime:
        raise UserError(f"--start {start} is in the future; a virtual clock never runs ahead of real time") from None
    except ValueError as exc:
        raise UserError(f"--start must be an ISO time with an offset, e.g. 2026-07-01T00:00:00+05:30 ({exc})") from None


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve(args: argparse.Namespace, settings: Settings) -> int:
    saved = _saved_header(args.state)
    options = dict(clock=_clock(args.start), seed=_seed(args.seed, saved, args.state),
                   timezone=_timezone(args.timezone, saved, args.state, settings),
                   faults=_faults(args.fault, saved, args.state),
                   userid=args.userid, password=args.password, api_key=args.api_key,
                   host=args.host, port=args.port, admin_port=args.admin_port, state_file=args.state)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)  # a plain `kill` stops it like Ctrl-C: state saved
    with contextlib.ExitStack() as stack:
        try:
            sim = stack.enter_context(run_simulator(**options))
        except RuntimeError as exc:
            raise UserError(f"cannot start the simulator on {args.host}:{args.port}: {exc}") from None
        except statefile.StateFileError as exc:
            raise UserError(str(exc)) from None
        except OSError as exc:
            raise UserError(f"cannot use the simulator state {args.state}: {exc.strerror}") from None
        try:  # from here a stop signal stops it cleanly, even one that arrives while it prints
            print(f"provider API: {sim.base_url}")  # `sms-pipeline dev` reads the port here (dev_cmd.SIMULATOR_UP)
            print(f"admin:        {sim.admin_url}  (ledger, clock, faults, credits, reset)")
            if args.state is not None:
                print(f"state:        {args.state}  ({sim.state.ledger_size()} messages; saved as they change)")
            print("Ctrl-C stops it.", flush=True)
            # Short sleeps, not a wait without end: a stop signal that reaches one of the server's
            # threads (sent to that thread, or handed to it while the main thread blocks signals) is
            # raised in the main thread only when that thread next runs Python code.
            while True:
                time.sleep(SIGNAL_CHECK_S)
        except KeyboardInterrupt:
            pass
    return 0
