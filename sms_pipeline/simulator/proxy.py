"""A small TCP proxy in front of the simulator's app, for network-level faults.

An ASGI app cannot refuse a connection or vanish without an answer (an
exception becomes an HTTP 500), so those faults live here:

- ``refuse_connection``: the proxy stops listening, so connecting fails with
  "connection refused" (nothing can have been sent). There is no request to
  hash before a connection exists, so the draw is per time slot of
  ``slot_s`` seconds; rates 0 and 1 are exact, rates in between are not
  reproducible to the request.
- ``accept_then_drop`` / ``stall``: decided and billed by the app, which
  marks its answer with the ``x-sim-network-fault`` header; the proxy then
  resets the client connection instead of forwarding the answer, or holds it
  silent until the client gives up (or ``stall_s`` passes).

Everything else is forwarded byte for byte. Responses are framed (HTTP/1.1
Content-Length or chunked) only to find each answer's header block on a
kept-alive connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from dataclasses import dataclass

from sms_pipeline.simulator import faults as faults_module
from sms_pipeline.simulator.app import NETWORK_FAULT_HEADER
from sms_pipeline.simulator.faults import FaultConfig

log = logging.getLogger(__name__)
_FAULT_HEADER = NETWORK_FAULT_HEADER.encode("ascii")
_MAX_HEAD = 64 * 1024


def listening_socket(host: str, port: int) -> socket.socket:
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only when
    # their proto says TCP, and without it every answer written in two parts
    # waits ~40 ms for a delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


class FaultProxy:
    def __init__(self, upstream: tuple[str, int], faults: FaultConfig, seed: int, *,
                 host: str = "127.0.0.1", port: int = 0, slot_s: float = 0.25) -> None:
        self._upstream = upstream
        self._faults = faults
        self._seed = seed
        self._host = host
        self.port = port
        self._slot_s = slot_s
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._started = time.monotonic()
        self._ticker: asyncio.Task[None] | None = None
        self._links: set[_Link] = set()

    # ----- listening (refuse_connection) -------------------------------------

    async def start(self) -> int:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.current_thread()
        sock = listening_socket(self._host, self.port)
        self.port = sock.getsockname()[1]
        self._server = await asyncio.start_server(self._serve, sock=sock)
        await self.apply()  # stops listening again if connections are to be refused
        self._faults.observe(self._faults_changed)
        self._ticker = asyncio.create_task(self._tick())
        return self.port

    def _refusing(self) -> bool:
        slot = int((time.monotonic() - self._started) / self._slot_s)
        return faults_module.fires(self._faults.rate("refuse_connection"), self._seed, "refuse_connection", slot)

    async def apply(self) -> None:
        """Listen or stop listening, as refuse_connection says for this moment."""
        refusing = self._refusing()
        if refusing and self._server is not None:
            self._server.close()
            self._server = None
            self._faults.count("refuse_connection")
            # A server that goes away takes its idle kept-alive connections with
            # it, so a client's next request must connect anew (and be refused).
            for link in [link for link in self._links if not link.busy]:
                link.abort()
            await asyncio.sleep(0)  # let the transports close their sockets
        elif not refusing and self._server is None:
            self._server = await asyncio.start_server(self._serve, sock=listening_socket(self._host, self.port))

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self._slot_s)
            await self.apply()

    def _faults_changed(self) -> None:
        """Observer: apply a change before the thread that made it goes on."""
        if self._loop is None or threading.current_thread() is self._loop_thread:
            return  # the admin endpoint awaits apply() itself
        asyncio.run_coroutine_threadsafe(self.apply(), self._loop).result(timeout=10)

    async def close(self) -> None:
        self._faults.unobserve(self._faults_changed)
        if self._ticker is not None:
            self._ticker.cancel()
        if self._server is not None:
            self._server.close()
            self._server = None
        for link in list(self._links):
            link.abort()

    # ----- one client connection ----------------------------------------------

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            client_writer.transport.abort()
            return
        link = _Link(client_writer, upstream_writer)
        self._links.add(link)
        pump = asyncio.create_task(self._pump(client_reader, link))
        try:
            await self._relay_responses(upstream_reader, client_reader, link, pump)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            client_writer.transport.abort()
        finally:
            pump.cancel()
            upstream_writer.transport.abort()
            if not client_writer.transport.is_closing():
                client_writer.close()
            self._links.discard(link)

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, link: _Link) -> None:
        """Client bytes to the app, unchanged; the client's EOF closes the app side."""
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(1 << 16):
                link.busy = True
                link.upstream.write(data)
                await link.upstream.drain()
        link.upstream.close()

    async def _relay_responses(self, upstream: asyncio.StreamReader, client_reader: asyncio.StreamReader,
                               link: _Link, pump: asyncio.Task[None]) -> None:
        client = link.client
        while True:
            try:
                head = await upstream.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return  # the app closed the connection between answers
            headers = _parse_head(head)
            fault = headers.get(_FAULT_HEADER)
            if fault is not None:
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pump
                if fault.startswith(b"stall"):
                    await self._stall(client_reader, float(fault.split()[1]))
                client.transport.abort()  # RST: the answer never arrives
                return
            client.write(head)
            await _forward_body(upstream, client, head, headers)
            await client.drain()
            link.busy = False

    @staticmethod
    async def _stall(client_reader: asyncio.StreamReader, stall_s: float) -> None:
        """Say nothing until the client hangs up (its read time-out) or stall_s passes."""
        with contextlib.suppress(asyncio.TimeoutError, ConnectionError):
            async with asyncio.timeout(stall_s):
                while await client_reader.read(1 << 16):
                    pass


@dataclass(eq=False)
class _Link:
    """One proxied connection: the client side and the app side."""

    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    busy: bool = False  # a request is on its way or being answered

    def abort(self) -> None:
        self.client.transport.abort()
        self.upstream.transport.abort()


def _parse_head(head: bytes) -> dict[bytes, bytes]:
    if len(head) > _MAX_HEAD:
        raise ConnectionError("response head too large")
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return headers


async def _forward_body(upstream: asyncio.StreamReader, client: asyncio.StreamWriter, head: bytes,
                        headers: dict[bytes, bytes]) -> None:
    status = int(head.split(b" ", 2)[1])
    if status < 200 or status in (204, 304):
        return
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        while True:
            size_line = await upstream.readuntil(b"\r\n")
            client.write(size_line)
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                while (trailer := await upstream.readuntil(b"\r\n")) != b"\r\n":
                    client.write(trailer)
                client.write(b"\r\n")
                return
            await _copy_exactly(upstream, client, size + 2)
    elif b"content-length" in headers:
        await _copy_exactly(upstream, client, int(headers[b"content-length"]))
    else:
        while data := await upstream.read(1 << 16):
            client.write(data)
            await client.drain()


async def _copy_exactly(upstream: asyncio.StreamReader, client: asyncio.StreamWriter, count: int) -> None:
    while count > 0:
        data = await upstream.read(min(count, 1 << 16))
        if not data:
            raise asyncio.IncompleteReadError(b"", count)
        client.write(data)
        await client.drain()
        count -= len(data)
