"""``sms-pipeline dev``: database + simulator + ``dagster dev`` (webserver and daemon).

Without ``SMS_PROVIDER_BASE_URL`` a provider simulator is started beside the
UI (real time) and the Dagster processes are pointed at it; with it, the
configured provider is used. The simulator keeps its traffic in the home,
where ``sms-pipeline demo`` left the demo's (same seed and time zone), so
the UI's backfills replay the demo's days. Dagster's storage is the Postgres database
``SMS_PIPELINE_DAGSTER_DATABASE`` on the same server as the application.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

from sms_pipeline.errors import UserError
from sms_pipeline.settings import Settings

# The checkout's workspace.yaml, written into DAGSTER_HOME so that an installed
# package (which has no checkout) loads the same code location.
WORKSPACE = """\
load_from:
  - python_module:
      module_name: sms_pipeline.definitions
      location_name: sms_pipeline
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("dev", help="the Dagster UI (webserver + daemon) on the project's database")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3000, help="UI port (default 3000)")
    parser.add_argument("--simulator-port", type=int, default=0,
                        help="port of the provider simulator started when no provider is configured (0: any)")
    parser.set_defaults(handler=dev)


def simulator_command(settings: Settings, host: str, port: int) -> list[str]:
    """The simulator ``dev`` starts: on the home's saved traffic, with the demo's seed and the provider's zone.

    Only the traffic and what shapes its reports carry over from the demo
    (statefile.py); the demo's dropped connections, 5xx and 429s do not.
    """
    from sms_pipeline.demo.run import DEMO_SEED, simulator_state_file

    return [sys.executable, "-m", "sms_pipeline.cli", "simulator", "--host", host, "--port", str(port),
            "--state", str(simulator_state_file(settings).resolve()), "--seed", str(DEMO_SEED),
            "--timezone", settings.provider_timezone.key]


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _require_free(host: str, port: int, what: str) -> None:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            raise UserError(f"port {port} on {host} is in use ({what}); choose another with --port") from None


def _wait_for_port(host: str, port: int, process: subprocess.Popen, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise UserError(f"the provider simulator exited with code {process.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise UserError(f"the provider simulator did not open port {port} within {timeout_s:.0f} s")


_SUPERSEDED_NOTE = "ignore:Function `dev_command` is superseded"


def dev(args: argparse.Namespace, settings: Settings) -> int:
    from sms_pipeline.db import connection, migrate
    from sms_pipeline.marts.project import dbt_project, prepare_manifest
    from sms_pipeline.orchestration.instance import prepare_dagster_home

    _require_free(args.host, args.port, "Dagster UI")
    with connection.connect(settings) as conn:
        migrate.upgrade(conn)
    dagster_home = prepare_dagster_home(settings)
    workspace = dagster_home / "workspace.yaml"
    workspace.write_text(WORKSPACE, encoding="utf-8")
    prepare_manifest(dbt_project(settings.home))

    env = dict(os.environ, DAGSTER_HOME=str(dagster_home), DO_NOT_TRACK="1",
               # `dagster dev` calls itself superseded by `dg dev`, which is not a dependency here.
               PYTHONWARNINGS=",".join(filter(None, (os.environ.get("PYTHONWARNINGS"), _SUPERSEDED_NOTE))))
    if not settings.database_url:
        # Child processes must use the same embedded server, wherever they start.
        env["SMS_PIPELINE_HOME"] = str(settings.home.resolve())
    children: list[subprocess.Popen] = []
    try:
        if "SMS_PROVIDER_BASE_URL" not in os.environ:
            sim_port = args.simulator_port or _free_port(args.host)
            _require_free(args.host, sim_port, "provider simulator")
            simulator = subprocess.Popen(simulator_command(settings, args.host, sim_port), env=env)
            children.append(simulator)
            _wait_for_port(args.host, sim_port, simulator)
            env.update(
                SMS_PROVIDER_BASE_URL=f"http://{args.host}:{sim_port}/SMSApi",
                SMS_PROVIDER_USERID="demo",
                SMS_PROVIDER_PASSWORD="demo",
            )
            print(f"provider simulator: http://{args.host}:{sim_port}/SMSApi")
        print(f"Dagster UI: http://{args.host}:{args.port}  (DAGSTER_HOME={dagster_home})", flush=True)
        ui = subprocess.Popen(
            [sys.executable, "-m", "dagster", "dev", "-w", str(workspace), "-h", args.host, "-p", str(args.port)],
            env=env,
        )
        children.append(ui)
        return ui.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        for child in reversed(children):
            if child.poll() is None:
                child.send_signal(signal.SIGINT)
        for child in reversed(children):
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
