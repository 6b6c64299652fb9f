"""``sms-pipeline simulator``: serve the provider simulator in the foreground."""

from __future__ import annotations

import argparse
import contextlib
import threading
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sms_pipeline.core.clock import ClockAheadOfRealTime, RealClock, VirtualClock
from sms_pipeline.errors import UserError
from sms_pipeline.settings import Settings
from sms_pipeline.simulator.faults import FAULT_NAMES, PARAMETERS, FaultConfig, FaultSpecError, parse_spec
from sms_pipeline.simulator.server import run_simulator


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
    parser.add_argument("--seed", type=int, default=0, help="ids, outcomes and fault draws follow from it")
    parser.add_argument("--timezone", default=None, help="provider time zone (default: SMS_PROVIDER_TIMEZONE)")
    parser.add_argument("--fault", action="append", default=[], metavar="NAME=RATE",
                        help="fault rate in [0, 1] (or a parameter value); repeatable")
    parser.add_argument("--start", default=None, metavar="ISO_TIME",
                        help="run on a virtual clock starting here (moved via /_sim/clock); default: real time")
    parser.add_argument("--userid", default="demo")
    parser.add_argument("--password", default="demo")
    parser.add_argument("--api-key", default="demo-key")
    parser.set_defaults(handler=serve)


def _faults(specs: list[str]) -> FaultConfig:
    try:
        return FaultConfig(dict(parse_spec(spec) for spec in specs))
    except FaultSpecError as exc:
        raise UserError(f"--fault: {exc}") from None


def _clock(start: str | None) -> RealClock | VirtualClock:
    if start is None:
        return RealClock()
    try:
        return VirtualClock(datetime.fromisoformat(start))
    except ClockAheadOfRealTime:
        raise UserError(f"--start {start} is in the future; a virtual clock never runs ahead of real time") from None
    except ValueError as exc:
        raise UserError(f"--start must be an ISO time with an offset, e.g. 2026-07-01T00:00:00+05:30 ({exc})") from None


def serve(args: argparse.Namespace, settings: Settings) -> int:
    try:
        timezone = ZoneInfo(args.timezone) if args.timezone else settings.provider_timezone
    except (ZoneInfoNotFoundError, ValueError):
        raise UserError(f"--timezone {args.timezone!r} is not an IANA time zone") from None
    options = dict(clock=_clock(args.start), seed=args.seed, timezone=timezone, faults=_faults(args.fault),
                   userid=args.userid, password=args.password, api_key=args.api_key,
                   host=args.host, port=args.port, admin_port=args.admin_port)
    with contextlib.ExitStack() as stack:
        try:
            sim = stack.enter_context(run_simulator(**options))
        except RuntimeError as exc:
            raise UserError(f"cannot start the simulator on {args.host}:{args.port}: {exc}") from None
        print(f"provider API: {sim.base_url}")
        print(f"admin:        {sim.admin_url}  (ledger, clock, faults, credits, reset)")
        print("Ctrl-C stops it.", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0
