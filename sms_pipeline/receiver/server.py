"""Serve the receiver with uvicorn: in the foreground (``sms-pipeline receiver``) or in a thread (tests).

One process, one event loop; the database work runs in its thread pool on
a psycopg pool of ``SMS_PIPELINE_RECEIVER_POOL_SIZE`` connections. More
throughput or availability is more receiver processes behind a load
balancer, all writing to the same database (the inbox's key makes a push
stored twice by two processes one row).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn

from sms_pipeline.receiver.app import HEALTH_PATH, PUSH_PREFIX, Receiver, ReceiverConfig

_START_TIMEOUT_S = 15


@dataclass(frozen=True)
class RunningReceiver:
    base_url: str  # http://host:port
    receiver: Receiver

    @property
    def push_url(self) -> str:
        """The URL to register with the provider (it holds the secret: never print it)."""
        return self.base_url + PUSH_PREFIX + self.receiver.config.secret.get_secret_value()

    @property
    def health_url(self) -> str:
        return self.base_url + HEALTH_PATH


def shown_url(base_url: str) -> str:
    """The push URL as it may be printed: the secret masked."""
    return f"{base_url}{PUSH_PREFIX}***"


def listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only when their proto says TCP.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def _base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _server(receiver: Receiver) -> uvicorn.Server:
    logging.getLogger("psycopg.pool").setLevel(logging.WARNING)  # at INFO it logs every checkout
    # access_log=False: its lines print the path, and the path holds the secret.
    # timeout_keep_alive above the provider client's idle time: a push sent as the server closes an
    # idle connection fails unanswered and waits for the provider's retry (docs/design.md#receipt-push).
    config = uvicorn.Config(receiver.app(), log_config=None, access_log=False, lifespan="on",
                            server_header=False, timeout_graceful_shutdown=5,
                            timeout_keep_alive=receiver.config.keep_alive_s)
    return uvicorn.Server(config)


def _run(server: uvicorn.Server, sock: socket.socket, on_started: Callable[[], None]) -> None:
    # uvicorn's own loop choice: uvloop when installed, else asyncio's.
    with asyncio.Runner(loop_factory=server.config.get_loop_factory()) as runner:
        runner.run(_serve(server, sock, on_started))


async def _serve(server: uvicorn.Server, sock: socket.socket, on_started: Callable[[], None]) -> None:
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            serving.result()  # raises why uvicorn stopped
            raise RuntimeError("the receiver stopped while starting")
        await asyncio.sleep(0.01)
    on_started()
    await serving


def serve(config: ReceiverConfig, host: str, port: int, on_started: Callable[[str], None]) -> None:
    """Serve until SIGINT or SIGTERM; ``on_started(base_url)`` once it accepts requests."""
    sock = listening_socket(host, port)
    server = _server(Receiver(config))
    _run(server, sock, lambda: on_started(_base_url(sock)))


class _ServerThread(threading.Thread):
    def __init__(self, receiver: Receiver, sock: socket.socket) -> None:
        super().__init__(name="sms-receiver", daemon=True)
        self._server = _server(receiver)
        self._sock = sock
        self.ready = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            _run(self._server, self._sock, self.ready.set)
        except BaseException as exc:  # reported to the starting thread
            self.error = exc
            self.ready.set()

    def stop(self) -> None:
        self._server.should_exit = True
        self.join(timeout=15)


@contextmanager
def run_receiver(config: ReceiverConfig, host: str = "127.0.0.1", port: int = 0) -> Iterator[RunningReceiver]:
    """Serve a receiver in a background thread until the block ends (port 0: any free port)."""
    sock = listening_socket(host, port)
    receiver = Receiver(config)
    thread = _ServerThread(receiver, sock)
    thread.start()
    if not thread.ready.wait(_START_TIMEOUT_S) or thread.error is not None:
        thread.stop()
        raise RuntimeError(f"receiver did not start: {thread.error!r}")
    try:
        yield RunningReceiver(_base_url(sock), receiver)
    finally:
        thread.stop()
