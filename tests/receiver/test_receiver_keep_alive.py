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


def _health_twice(receiver: RunningReceiver, idle_s: float) -> None:
    """Two health requests on one connection, ``idle_s`` apart; raises when the server closed it."""
    url = urlsplit(receiver.base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        assert conn.getresponse().read()
        sock = conn.sock
        time.sleep(idle_s)
        conn.request("GET", "/healthz")
        assert conn.sock is sock  # the same connection, not a new one
        assert conn.getresponse().status == 200
    finally:
        conn.close()


def test_a_connection_idle_past_the_usual_five_seconds_is_still_answered(receiver):
    """uvicorn and httpx both drop an idle connection after 5 s by default, which is the race."""
    _health_twice(receiver, idle_s=6)


@pytest.mark.parametrize("receiver_variables", [{"SMS_PIPELINE_RECEIVER_KEEP_ALIVE_S": "1"}])
def test_the_keep_alive_setting_is_the_servers_idle_limit(receiver):
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        _health_twice(receiver, idle_s=2.5)
