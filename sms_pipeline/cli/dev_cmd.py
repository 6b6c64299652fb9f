"""``sms-pipeline dev``: database + simulator + ``dagster dev`` (webserver and daemon).

Without ``SMS_PROVIDER_BASE_URL`` a provider simulator is started beside the
UI (real time) and the Dagster processes are pointed at it, together with
the receipt-push receiver (``sms-pipeline receiver``, registered at that
simulator, never at a configured provider) and the ``reconcile recent``
loop, so a message sent now shows as delivered within a minute; with it, the
configured provider is used and neither is started. The simulator keeps its traffic in the home,
where ``sms-pipeline demo`` left the demo's (same seed and time zone), so
the UI's backfills replay the demo's days. Dagster's storage is the Postgres database
``SMS_PIPELINE_DAGSTER_DATABASE`` on the same server as the application.

The terminal stays quiet: where the UI is, how to stop it, and the lines
logged at WARNING or above (a Python warning too). Everything the processes
print goes to files under ``$SMS_PIPELINE_HOME/logs/`` (``sms_pipeline.logging``):
``dagster-dev.log`` takes the webserver's, daemon's and code server's INFO
lines (``dagster dev --log-level info --code-server-log-level info``), every
event of the runs they launch, DEBUG ones included (the runs' console logger
takes ``python_logs.python_log_level: DEBUG`` from ``dagster.yaml``), and
dbt's output (which the compute log manager also keeps per step, shown in the
UI); ``simulator.log``, ``receiver.log`` and ``reconcile-recent.log`` take the
simulator's, the receiver's and the reconcile loop's. When ``dagster dev`` stops on
its own, its last lines are shown.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from sms_pipeline.errors import UserError
from sms_pipeline.logging import child_log, dev_log
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


def _require_free(host: str, port: int, what: str, option: str = "--port") -> None:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            raise UserError(f"port {port} on {host} is in use ({what}); choose another with {option}") from None


# What the simulator and the receiver print once they accept connections, with the port they bound: dev
# starts them on port 0 and reads it here (a port picked first and bound later by the child could be
# taken in between by another process; seen in CI as the simulator's "address in use").
SIMULATOR_UP = re.compile(r"^provider API: (http://\S+/SMSApi)")
RECEIVER_UP = re.compile(r"^receiver: POST (http://[^/\s]+)/")


class Announcement:
    """The URL a child's output announces (``pattern``'s group 1); fed line by line by its forwarder."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self._pattern = pattern
        self._seen = threading.Event()
        self.url: str | None = None

    def __call__(self, line: str) -> None:
        if not self._seen.is_set() and (match := self._pattern.search(line)):
            self.url = match.group(1)
            self._seen.set()

    def wait(self, process: subprocess.Popen, what: str, timeout_s: float = 30) -> str:
        deadline = time.monotonic() + timeout_s
        while not self._seen.wait(0.2):
            if process.poll() is not None:
                raise UserError(f"the {what} exited with code {process.returncode}")
            if time.monotonic() > deadline:
                raise UserError(f"the {what} did not announce its URL within {timeout_s:.0f} s")
        assert self.url is not None  # set before the event
        return self.url


def _cli(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "sms_pipeline.cli", *arguments]


RECONCILE_EVERY = "10s"  # how often dev's reconcile loop reads the push inbox
# Pushes per second dev registers: the simulator's real-time traffic, never its default 10/s backlog.
DEV_PUSH_RATE = 200


def register_receiver(settings: Settings, simulator_url: str, receiver_url: str) -> None:
    """Register ``receiver_url`` for receipt pushes at the simulator ``dev`` started (replacing a registration
    its saved state kept from an earlier session)."""
    from pydantic import SecretStr

    from sms_pipeline.provider.client import ProviderClient
    from sms_pipeline.receiver import registration

    simulator = settings.model_copy(update={
        "provider_base_url": simulator_url, "provider_userid": "demo", "provider_password": SecretStr("demo"),
        "provider_api_key": None})
    with ProviderClient.from_settings(simulator) as client:
        registration.register(client, receiver_url, DEV_PUSH_RATE)


_SUPERSEDED_NOTE = "ignore:Function `dev_command` is superseded"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# A record of Dagster's loggers (services and runs): "2026-12-01 15:56:03 +0000 - dagster.daemon - INFO - ..."
_DAGSTER_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? [+-]\d{4} - \S+ - ([A-Z]+) - ")
# A record of sms_pipeline.logging's console handler (the simulator): "WARNING sms_pipeline.x: ..."
_PROJECT_RECORD = re.compile(r"^([A-Z]+) [\w.]+: ")
# What warnings.showwarning prints: "/path/module.py:12: SomeWarning: message"
_PYTHON_WARNING = re.compile(r"^\S.*:\d+: \w*Warning: ")
_SHOWN_LEVELS = {"WARNING", "ERROR", "CRITICAL"}
_SERVING = re.compile(r"Serving dagster-webserver on (\S+)")
TAIL_LINES = 20


def shown_on_console(line: str) -> bool:
    """Whether a line a child printed (colour codes removed) reaches the terminal as well as the log file.

    Log records at WARNING and above and Python warnings do; INFO and DEBUG
    records, dbt's output and the lines following a record (a traceback, an
    event's metadata) stay in the file.
    """
    for pattern in (_DAGSTER_RECORD, _PROJECT_RECORD):
        match = pattern.match(line)
        if match:
            return match.group(1) in _SHOWN_LEVELS
    return bool(_PYTHON_WARNING.match(line))


class Forwarder(threading.Thread):
    """Copies a child's output to its log file, and the lines :func:`shown_on_console` to the terminal.

    ``on_line`` sees every line (colour codes removed); ``tail`` keeps the last ones.
    """

    def __init__(self, source: IO[bytes], log_path: Path, console: IO[str], on_line=None) -> None:
        super().__init__(daemon=True, name=f"forward to {log_path.name}")
        self.source, self.log_path, self.console, self.on_line = source, log_path, console, on_line
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)

    def run(self) -> None:
        colour = self.console.isatty()
        with self.log_path.open("a", encoding="utf-8") as log:
            for raw in iter(self.source.readline, b""):
                line = raw.decode("utf-8", "replace")
                plain = _ANSI.sub("", line)
                log.write(plain)
                log.flush()
                plain = plain.rstrip("\n")
                self.tail.append(plain)
                if shown_on_console(plain):
                    print(line.rstrip("\n") if colour else plain, file=self.console, flush=True)
                if self.on_line is not None:
                    self.on_line(plain)


def _start_forwarder(process: subprocess.Popen, log_path: Path, on_line=None) -> Forwarder:
    forwarder = Forwarder(process.stdout, log_path, sys.stdout, on_line)
    forwarder.start()
    return forwarder


def _session_header(log_path: Path, what: str) -> None:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("a", encoding="utf-8") as log:
        log.write(f"==== {time.strftime('%Y-%m-%d %H:%M:%S %z')} sms-pipeline dev (pid {os.getpid()}): {what}\n")


def dev(args: argparse.Namespace, settings: Settings) -> int:
    from sms_pipeline.db import connection, migrate
    from sms_pipeline.marts.project import dbt_project, prepare_manifest
    from sms_pipeline.orchestration.instance import prepare_dagster_home

    _require_free(args.host, args.port, "Dagster UI")
    # Started in a script's background (`sms-pipeline dev &`), this process and every child it starts
    # would inherit an ignored SIGINT: the children would not hear the SIGINT that stops them, and
    # `dagster dev`, killed after its wait, would leave its webserver holding the port. A handled
    # signal is reset to the default in each child.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with connection.connect(settings) as conn:
        migrate.upgrade(conn)
    dagster_home = prepare_dagster_home(settings)
    workspace = dagster_home / "workspace.yaml"
    workspace.write_text(WORKSPACE, encoding="utf-8")
    prepare_manifest(dbt_project(settings.home))

    env = dict(os.environ, DAGSTER_HOME=str(dagster_home), DO_NOT_TRACK="1", PYTHONUNBUFFERED="1",
               # `dagster dev` calls itself superseded by `dg dev`, which is not a dependency here.
               PYTHONWARNINGS=",".join(filter(None, (os.environ.get("PYTHONWARNINGS"), _SUPERSEDED_NOTE))))
    if not settings.database_url:
        # Child processes must use the same embedded server, wherever they start.
        env["SMS_PIPELINE_HOME"] = str(settings.home.resolve())
    dagster_log = dev_log(settings.home).resolve()
    children: list[subprocess.Popen] = []
    forwarders: list[Forwarder] = []
    stopping = False

    def start(what: str, command: list[str], log_path: Path, on_line=None) -> subprocess.Popen:
        _session_header(log_path, what)
        child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        children.append(child)
        forwarders.append(_start_forwarder(child, log_path, on_line))
        return child

    def start_announced(what: str, command: list[str], log_path: Path, up: re.Pattern[str]) -> str:
        """Start a child and wait for the URL it announces once it accepts connections."""
        announcement = Announcement(up)
        child = start(what, command, log_path, announcement)
        try:
            return announcement.wait(child, what)
        except UserError as exc:
            raise UserError(f"{exc} (its output: {log_path})") from None

    # A service manager stops with SIGTERM: stop the children as Ctrl-C does, never leave them holding the ports.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        if "SMS_PROVIDER_BASE_URL" not in os.environ:
            if args.simulator_port:
                _require_free(args.host, args.simulator_port, "provider simulator", "--simulator-port")
            simulator_url = start_announced(
                "provider simulator", simulator_command(settings, args.host, args.simulator_port),
                child_log(settings.home, "simulator").resolve(), SIMULATOR_UP)
            env.update(SMS_PROVIDER_BASE_URL=simulator_url, SMS_PROVIDER_USERID="demo", SMS_PROVIDER_PASSWORD="demo")
            env.pop("SMS_PROVIDER_API_KEY", None)
            print(f"provider simulator: {simulator_url}")
            # Receipts pushed by that simulator: a secret of this session unless one is set.
            secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else \
                secrets.token_urlsafe(24)
            env["SMS_PIPELINE_WEBHOOK_SECRET"] = secret
            receiver_url = start_announced(
                "receipt-push receiver", _cli("receiver", "--host", args.host, "--port", "0"),
                child_log(settings.home, "receiver").resolve(), RECEIVER_UP)
            register_receiver(settings, simulator_url, f"{receiver_url}/dlr/{secret}")
            start("reconcile recent", _cli("reconcile", "recent", "--every", RECONCILE_EVERY),
                  child_log(settings.home, "reconcile-recent").resolve())
            print(f"receipt pushes: {receiver_url}/dlr/*** (registered at the simulator), "
                  f"reconciled every {RECONCILE_EVERY}")
        print(f"Dagster UI: http://{args.host}:{args.port}  (DAGSTER_HOME={dagster_home})")
        print(f"logs: {dagster_log} (webserver, daemon, runs' events, dbt's output); "
              f"the terminal shows warnings and errors", flush=True)
        _session_header(dagster_log, "dagster dev")

        def on_line(line: str) -> None:
            if _SERVING.search(line):
                print("the UI is up; Ctrl-C stops it", flush=True)

        ui = subprocess.Popen(
            [sys.executable, "-m", "dagster", "dev", "-w", str(workspace), "-h", args.host, "-p", str(args.port),
             "--log-level", "info", "--code-server-log-level", "info", "--log-format", "colored"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        children.append(ui)
        forwarders.append(_start_forwarder(ui, dagster_log, on_line))
        code = ui.wait()
        forwarders[-1].join(timeout=5)
        if code != 0:
            print(f"dagster dev exited with code {code}; its last lines (all of them in {dagster_log}):",
                  file=sys.stderr)
            for line in forwarders[-1].tail:
                print(f"  {line}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        stopping = True
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
        for forwarder in forwarders:
            forwarder.join(timeout=5)
        if stopping:
            print("stopped", flush=True)
