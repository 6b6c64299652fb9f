"""Idle push connections: the receiver keeps one open longer than a client usually does.

A client that reuses a kept-alive connection the instant the server closes it
gets no answer, and the provider retries only later (docs/design.md#receipt-push).
Read on a raw HTTP/1.1 connection, so no client pool can hide a reconnect.
"""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlsplit

import pytest

from sms_pipeline.receiver.server import RunningReceiver


def _connection_after(receiver: RunningReceiver, idle_s: float) -> http.client.HTTPConnection:
    """A connection that had one health request answered, then stayed idle ``idle_s``."""
    url = urlsplit(receiver.base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    conn.request("GET", "/healthz")
    assert conn.getresponse().read()
    time.sleep(idle_s)
    return conn


def _health_again(conn: http.client.HTTPConnection) -> int:
    """The next request on the same socket (http.client reconnects only when it has none)."""
    sock = conn.sock
    conn.request("GET", "/healthz")
    assert conn.sock is sock
    return conn.getresponse().status


def test_a_connection_idle_past_the_usual_five_seconds_is_still_answered(receiver):
    """uvicorn and httpx both drop an idle connection after 5 s by default, which is the race."""
    conn = _connection_after(receiver, idle_s=6)
    try:
        assert _health_again(conn) == 200
    finally:
        conn.close()


@pytest.mark.parametrize("receiver_variables", [{"SMS_PIPELINE_RECEIVER_KEEP_ALIVE_S": "1"}])
def test_the_keep_alive_setting_is_the_servers_idle_limit(receiver):
    conn = _connection_after(receiver, idle_s=2.5)
    try:
        with pytest.raises(ConnectionError):  # RemoteDisconnected, or a reset
            _health_again(conn)
    finally:
        conn.close()
