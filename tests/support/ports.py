"""A free local port, for a server or command that takes its port from an argument or a setting."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now on 127.0.0.1 (the OS picked it; another process may take it later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
