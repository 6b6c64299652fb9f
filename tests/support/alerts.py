"""Stand-ins for the places alerts go: a local HTTP server taking webhook posts, a local SMTP server."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from tests.support.ports import free_port

SECRET_PATH = "/services/T0000/B0000/s3cr3t-webhook-token"  # a Slack webhook's path is its secret


@dataclass
class Webhook:
    url: str
    posts: list[dict] = field(default_factory=list)
    answer: int = 200  # the status every post gets
    delay_s: float = 0.0  # how long each post waits for its answer (longer than the sender's timeout: a hang)

    def take(self) -> list[dict]:
        """The posts received since the last call."""
        taken, self.posts[:] = list(self.posts), []
        return taken


@contextmanager
def webhook_server() -> Iterator[Webhook]:
    """A Slack stand-in on 127.0.0.1 recording each JSON post it receives."""
    hook = Webhook("")
    released = threading.Event()  # the server is closing: a hanging post is let go

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            hook.posts.append(json.loads(body))
            released.wait(hook.delay_s)
            with suppress(OSError):  # a sender that gave up waiting has closed the connection
                self.send_response(hook.answer)
                self.end_headers()
                self.wfile.write(b"ok")

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hook.url = f"http://127.0.0.1:{server.server_address[1]}{SECRET_PATH}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        released.set()
        server.shutdown()
        server.server_close()


@dataclass
class Mailbox:
    url: str
    messages: list[Message] = field(default_factory=list)

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        message = message_from_bytes(envelope.content)
        message["X-Envelope-To"] = ", ".join(envelope.rcpt_tos)
        self.messages.append(message)
        return "250 OK"


def self_signed_certificate(folder: Path) -> Path:
    """A certificate for 127.0.0.1 (its key beside it, ``.key``); trusted by a client whose SSL_CERT_FILE it is."""
    cert, key = folder / "smtp.pem", folder / "smtp.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert


@contextmanager
def smtp_server(login: tuple[str, str] | None = None, *, certificate: Path | None = None,
                implicit_tls: bool = False) -> Iterator[Mailbox]:
    """A real SMTP server on 127.0.0.1 keeping every message it accepts.

    ``login`` (user, password): it requires that login. ``certificate``: it requires STARTTLS before any
    mail or login, or with ``implicit_tls`` speaks TLS from the start (smtps://). Without one, a login goes
    over plain text.
    """
    port = free_port()
    mailbox = Mailbox(f"{'smtps' if implicit_tls else 'smtp'}://127.0.0.1:{port}")
    tls: dict = {}
    if certificate is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(certificate, certificate.with_suffix(".key"))
        tls = {"ssl_context": context} if implicit_tls else {"tls_context": context, "require_starttls": True}

    def authenticate(server, session, envelope, mechanism, auth_data) -> AuthResult:
        given = (auth_data.login.decode(), auth_data.password.decode())
        return AuthResult(success=given == login)

    auth = {"authenticator": authenticate, "auth_required": True,
            "auth_require_tls": certificate is not None and not implicit_tls} if login else {}
    controller = Controller(mailbox, hostname="127.0.0.1", port=port, **auth, **tls)
    controller.start()
    try:
        yield mailbox
    finally:
        controller.stop()
