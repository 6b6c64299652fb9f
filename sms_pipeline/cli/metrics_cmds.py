"""``sms-pipeline metrics serve``: Prometheus gauges read from the database at each scrape.

Also :func:`serving`, the ``/metrics`` server the worker starts on
``SMS_PIPELINE_METRICS_PORT``.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, start_http_server

from sms_pipeline.cli.signals import stop_on_signals
from sms_pipeline.core.clock import RealClock
from sms_pipeline.db import connection, migrate
from sms_pipeline.db.metrics import DatabaseCollector
from sms_pipeline.errors import UserError
from sms_pipeline.settings import Settings

DEFAULT_PORT = 9108


def register(sub: argparse._SubParsersAction) -> None:
    metrics = sub.add_parser("metrics", help="Prometheus metrics")
    actions = metrics.add_subparsers(dest="metrics_command", metavar="ACTION", required=True)
    serve = actions.add_parser("serve", help="serve gauges read from the database at each scrape on /metrics")
    serve.add_argument("--host", default="0.0.0.0", help="address to listen on (default: every address)")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT})")
    serve.set_defaults(handler=serve_metrics)


def _port(raw: str) -> int:
    value = int(raw)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be a port number from 0 to 65535")
    return value


@contextmanager
def serving(registry: CollectorRegistry, host: str, port: int) -> Iterator[int]:
    """Serve ``registry`` on http://host:port/metrics while the block runs; yields the port (0: any free one)."""
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise UserError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def serve_metrics(args: argparse.Namespace, settings: Settings) -> int:
    url = connection.app_url(settings)
    with connection.connect_url(url) as conn:
        migrate.upgrade(conn)
    registry = CollectorRegistry()
    # A short connect time-out: a scrape must answer `database_up 0` before Prometheus gives up on it.
    registry.register(DatabaseCollector(lambda: connection.connect_url(url, autocommit=True, connect_timeout_s=3),
                                        clock=RealClock(),
                                        zone=settings.provider_timezone))
    stopped = threading.Event()
    with serving(registry, args.host, args.port) as port, stop_on_signals(stopped.set, "stopping"):
        print(f"metrics: http://{args.host}:{port}/metrics (read from the database at each scrape); "
              "Ctrl-C stops it", flush=True)
        while not stopped.wait(0.5):  # short waits keep the main thread responsive to signals
            pass
    return 0
