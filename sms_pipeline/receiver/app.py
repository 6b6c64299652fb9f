"""The receiver's HTTP face: ``POST /dlr/<secret>`` stores a receipt push; ``GET /healthz`` and ``GET /metrics`` count.

What it answers (docs/design.md#receipt-push):

| request | answer | stored |
|---|---|---|
| a valid push | 200 ``stored``, sent only after the row is committed | a row in dlr.receipt_push_inbox |
| the same push again (msgId and error code) | 200 ``duplicate`` | nothing more |
| a push that breaks a rule | 400 and a short reason naming the parameter | a redacted row in dlr.receipt_push_rejects |
| a body over 16 KiB | 413 | nothing |
| ``/dlr/<another secret>`` | 403 | nothing |
| another method on ``/dlr/...`` | 405 | nothing |
| any other path | 404 | nothing |
| the database unreachable | 503 (the provider tries again) | nothing |

Parameters come from the form body (``application/x-www-form-urlencoded``
or ``multipart/form-data`` without files) and from the query string, both
read: the provider may send either. A parameter given in both places, or
twice, must have one value.

A wrong secret gets 403 rather than 404: the path's shape is documented
anyway, and 403 tells whoever registered a mistyped URL what is wrong.
The secret is compared in constant time and never logged: uvicorn's access
log (which prints paths) is off, and the receiver's own log lines name
counts and reasons, never a path, a number or an id. Counts, and how long
pushes waited for a database connection, are per process, shown by
``GET /healthz``; ``GET /metrics`` has the counts for Prometheus.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from sms_pipeline.db import queries
from sms_pipeline.errors import UserError
from sms_pipeline.receiver import metrics, pushes
from sms_pipeline.settings import Settings

log = logging.getLogger(__name__)

PUSH_PREFIX = "/dlr/"
HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"
MAX_BODY_BYTES = 16 * 1024
MAX_FIELDS = 64
# Under the provider's 10 s wait for an answer: a push that cannot get a connection by then gets a 503.
POOL_TIMEOUT_S = 5.0
# Pool waits kept for the percentiles of /healthz.
_RECENT_WAITS = 100_000


class SecretMissing(UserError):
    """The receiver has no secret to put in its path."""


def required_secret(settings: Settings) -> SecretStr:
    """``SMS_PIPELINE_WEBHOOK_SECRET``; :class:`SecretMissing` when unset."""
    if settings.webhook_secret is None:
        raise SecretMissing("SMS_PIPELINE_WEBHOOK_SECRET is not set: the receiver accepts pushes only on "
                            "/dlr/<secret> and will not start without one")
    return settings.webhook_secret


@dataclass(frozen=True)
class ReceiverConfig:
    """What one receiver process needs: its database, secret, parameter names and the provider's zone."""

    database_url: str = field(repr=False)
    secret: SecretStr
    parameters: Mapping[str, str]  # field -> parameter name (settings.WEBHOOK_FIELDS)
    timezone: ZoneInfo
    # No defaults of their own: the settings' (from_settings) are the only ones.
    pool_size: int
    keep_alive_s: int  # idle connections: docs/design.md#receipt-push
    pool_timeout_s: float = POOL_TIMEOUT_S

    @classmethod
    def from_settings(cls, settings: Settings, database_url: str, **overrides: Any) -> ReceiverConfig:
        options: dict[str, Any] = dict(database_url=database_url, secret=required_secret(settings),
                                       parameters=settings.webhook_parameters, timezone=settings.provider_timezone,
                                       pool_size=settings.receiver_pool_size,
                                       keep_alive_s=settings.receiver_keep_alive_s)
        options.update(overrides)
        return cls(**options)


@dataclass
class Counts:
    """Answers given since the process started, by kind."""

    stored: int = 0
    duplicate: int = 0
    malformed: int = 0
    forbidden: int = 0
    too_large: int = 0
    unavailable: int = 0


class PoolWaits:
    """How long pushes waited for a database connection (the pool's check of it included)."""

    def __init__(self) -> None:
        self.count = 0
        self.total_s = 0.0
        self.max_s = 0.0
        self._recent: deque[float] = deque(maxlen=_RECENT_WAITS)

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total_s += seconds
        self.max_s = max(self.max_s, seconds)
        self._recent.append(seconds)

    def summary(self) -> dict[str, float | int]:
        recent = sorted(self._recent)

        def quantile(q: float) -> float:
            return round(recent[min(len(recent) - 1, int(q * len(recent)))] * 1000, 3) if recent else 0.0

        return {"count": self.count, "total_ms": round(self.total_s * 1000, 3),
                "mean_ms": round(self.total_s / self.count * 1000, 3) if self.count else 0.0,
                "p50_ms": quantile(0.50), "p95_ms": quantile(0.95), "p99_ms": quantile(0.99),
                "max_ms": round(self.max_s * 1000, 3)}


class _TooLarge(Exception):
    pass


class _Unavailable(Exception):
    pass


class Receiver:
    """The application's state: the pool, the counts and the pool waits (touched only on the event loop)."""

    def __init__(self, config: ReceiverConfig) -> None:
        self.config = config
        self._secret = config.secret.get_secret_value().encode()
        self.counts = Counts()
        self.waits = PoolWaits()
        self._metrics = metrics.registry(lambda: asdict(self.counts))
        self._database_down = False
        self.pool = ConnectionPool(config.database_url, min_size=config.pool_size, max_size=config.pool_size,
                                   timeout=config.pool_timeout_s, open=False, name="receiver",
                                   kwargs={"autocommit": True, "connect_timeout": 5},
                                   check=ConnectionPool.check_connection)

    def app(self) -> Starlette:
        app = Starlette(routes=[Route(PUSH_PREFIX + "{secret}", self.push, methods=["POST"]),
                                Route(HEALTH_PATH, self.health, methods=["GET"]),
                                Route(METRICS_PATH, self.scrape, methods=["GET"])],
                        lifespan=self._lifespan)
        app.router.redirect_slashes = False  # a redirect would repeat the path, secret and all, in Location
        return app

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self.pool.open(wait=False)  # the connections are made in the background: start even with the database down
        try:
            yield
        finally:
            await run_in_threadpool(self.pool.close)

    # ----- the push ---------------------------------------------------------------

    async def push(self, request: Request) -> Response:
        if not hmac.compare_digest(request.path_params["secret"].encode(), self._secret):
            self.counts.forbidden += 1
            return PlainTextResponse("forbidden", status_code=403)
        try:
            params = await _parameters(request)
        except _TooLarge:
            self.counts.too_large += 1
            return PlainTextResponse(f"body over {MAX_BODY_BYTES} bytes", status_code=413)
        except ClientDisconnect:
            return PlainTextResponse("", status_code=400)  # nobody reads it
        except pushes.MalformedPush as exc:
            return await self._refuse(str(exc), [])
        try:
            push = pushes.parse(params, self.config.parameters, self.config.timezone)
        except pushes.MalformedPush as exc:
            return await self._refuse(str(exc), params)
        try:
            inserted = await self._run("receiver_store_push", **push.row())
        except (psycopg.IntegrityError, psycopg.DataError) as exc:  # a rule the checks above missed: refused
            log.warning("receipt push refused by the database (%s)", _constraint(exc))
            return await self._refuse(f"refused by the database ({_constraint(exc)})", params)
        except _Unavailable:
            return self._unavailable()
        if inserted:
            self.counts.stored += 1
            return PlainTextResponse("stored")
        self.counts.duplicate += 1
        return PlainTextResponse("duplicate")

    async def _refuse(self, reason: str, params: pushes.Parameters) -> Response:
        """400 with ``reason``, once the redacted push is kept (503 when it cannot be: the provider retries)."""
        try:
            await self._run("receiver_store_reject", reason=reason,
                            fields=Jsonb(pushes.redacted(params, self.config.parameters)))
        except _Unavailable:
            return self._unavailable()
        self.counts.malformed += 1
        log.info("receipt push refused: %s", reason)
        return PlainTextResponse(reason, status_code=400)

    def _unavailable(self) -> Response:
        self.counts.unavailable += 1
        return PlainTextResponse("database unavailable, try again later", status_code=503,
                                 headers={"Retry-After": "5"})

    async def _run(self, name: str, **params: Any) -> int:
        """Run the named statement on a pooled connection (autocommit: committed when this returns); its row count."""
        try:
            waited, rowcount = await run_in_threadpool(self._execute, name, params)
        except (psycopg.IntegrityError, psycopg.DataError):  # the push's fault, not the database's
            raise
        except psycopg.Error as exc:  # the pool's time-out included
            if not self._database_down:
                self._database_down = True
                log.warning("receiver: the database is unavailable (%s); answering 503 until it is back",
                            type(exc).__name__)
            raise _Unavailable from None
        self.waits.add(waited)
        if self._database_down:
            self._database_down = False
            log.warning("receiver: the database is back")
        return rowcount

    def _execute(self, name: str, params: dict[str, Any]) -> tuple[float, int]:
        asked = time.monotonic()
        with self.pool.connection() as conn:
            waited = time.monotonic() - asked
            return waited, queries.run(conn, name, **params).rowcount

    # ----- health -----------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        pool = self.pool.get_stats()
        return JSONResponse({"counts": asdict(self.counts), "pool_wait": self.waits.summary(),
                             "pool": {"size": pool.get("pool_size", 0), "available": pool.get("pool_available", 0),
                                      "waiting": pool.get("requests_waiting", 0)}})

    async def scrape(self, request: Request) -> Response:
        return Response(generate_latest(self._metrics), media_type=CONTENT_TYPE_LATEST)


def _constraint(exc: psycopg.Error) -> str:
    return (exc.diag.constraint_name if exc.diag is not None else None) or type(exc).__name__


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _TooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def _parameters(request: Request) -> list[tuple[str, str]]:
    """(name, value) pairs of the query string, then of the form body (read at most MAX_BODY_BYTES of it)."""
    body = await _body(request)

    async def replay() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        form = await Request(request.scope, replay).form(max_files=0, max_fields=MAX_FIELDS)
    except HTTPException:
        raise pushes.MalformedPush("the body is not a form of text fields") from None
    # max_files=0: a file part is refused above, every value is text.
    return [*request.query_params.multi_items(), *((n, v) for n, v in form.multi_items() if isinstance(v, str))]


def create_app(config: ReceiverConfig) -> tuple[Starlette, Receiver]:
    receiver = Receiver(config)
    return receiver.app(), receiver
