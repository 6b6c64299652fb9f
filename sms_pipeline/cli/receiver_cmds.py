"""``sms-pipeline receiver`` and ``sms-pipeline webhook register | show | delete``.

The receiver takes the provider's receipt pushes on ``POST /dlr/<secret>``
(``SMS_PIPELINE_WEBHOOK_SECRET``; without it the command refuses to start)
and stores them in the database; ``webhook`` registers the URL the
provider pushes to (docs/provider-contract.md#dlr-push-webhook). Nothing
printed shows the secret: the URL's secret segment reads ``***``.
"""

from __future__ import annotations

import argparse
import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sms_pipeline.core.redaction import mask_url_password
from sms_pipeline.db import connection, migrate
from sms_pipeline.errors import UserError
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import ProviderCallError
from sms_pipeline.receiver import registration
from sms_pipeline.receiver.app import PUSH_PREFIX, ReceiverConfig, required_secret
from sms_pipeline.receiver.server import serve, shown_url
from sms_pipeline.settings import Settings

_PUSH_SECRET = re.compile(rf"({re.escape(PUSH_PREFIX)})[^/?#\s]+")


def register(sub: argparse._SubParsersAction) -> None:
    receiver = sub.add_parser("receiver", help="receive the provider's receipt pushes on POST /dlr/<secret>")
    receiver.add_argument("--host", default="127.0.0.1",
                          help="address to listen on (default: 127.0.0.1, behind a reverse proxy with TLS)")
    receiver.add_argument("--port", type=_port, default=8600, help="port (default: 8600; 0: any free port)")
    receiver.set_defaults(handler=run_receiver)

    webhook = sub.add_parser("webhook", help="the receipt-push URL registered with the provider")
    actions = webhook.add_subparsers(dest="webhook_command", metavar="ACTION", required=True)
    register_action = actions.add_parser("register", help="register the URL (or change the registered one)")
    register_action.add_argument("--url", type=_http_url, required=True,
                                 help="where the provider pushes to, e.g. https://host/dlr/<secret>")
    register_action.add_argument("--rate", type=_positive, default=None,
                                 help="pushes per second (default: the provider's)")
    register_action.set_defaults(handler=register_webhook)
    actions.add_parser("show", help="the registered URL and rate").set_defaults(handler=show_webhook)
    actions.add_parser("delete", help="stop the pushes").set_defaults(handler=delete_webhook)


def _port(raw: str) -> int:
    value = int(raw)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be a port number from 0 to 65535")
    return value


def _positive(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _http_url(raw: str) -> str:
    if not raw.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError("must start with http:// or https://")
    return raw


def _shown(text: str, settings: Settings) -> str:
    """``text`` (a URL, or the provider's message quoting one) with the push secret and any password masked."""
    if settings.webhook_secret is not None:
        text = text.replace(settings.webhook_secret.get_secret_value(), "***")
    return mask_url_password(_PUSH_SECRET.sub(r"\1***", text))


# ----- receiver ------------------------------------------------------------------


def run_receiver(args: argparse.Namespace, settings: Settings) -> int:
    required_secret(settings)  # before anything else: no database work for a receiver that cannot start
    url = connection.app_url(settings)
    with connection.connect_url(url) as conn:
        migrate.upgrade(conn)
    config = ReceiverConfig.from_settings(settings, url)

    def started(base_url: str) -> None:
        # `sms-pipeline dev` reads the bound port from this line (dev_cmd.RECEIVER_UP)
        print(f"receiver: POST {shown_url(base_url)} (counts: GET {base_url}/healthz, {base_url}/metrics); "
              "Ctrl-C stops it", flush=True)

    main_thread = threading.current_thread() is threading.main_thread()
    # A plain `kill` stops it like Ctrl-C: uvicorn finishes the requests in flight and the pool closes; exit 0.
    previous = signal.signal(signal.SIGTERM, _interrupt) if main_thread else None
    try:
        serve(config, args.host, args.port, started)
    except OSError as exc:
        raise UserError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        pass
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


# ----- webhook -------------------------------------------------------------------


@contextmanager
def _provider(settings: Settings) -> Iterator[ProviderClient]:
    """The configured provider's client; its errors with the secret masked (an answer may quote the URL)."""
    try:
        with ProviderClient.from_settings(settings) as client:
            yield client
    except ProviderCallError as exc:
        raise ProviderCallError(_shown(str(exc), settings)) from None


def register_webhook(args: argparse.Namespace, settings: Settings) -> int:
    with _provider(settings) as client:
        answer, replaced = registration.register(client, args.url, args.rate)
    done = "registered" if replaced is None else f"changed (was {_shown(replaced.url, settings)})"
    rate = f" at {args.rate}/s" if args.rate is not None else ""
    print(f"webhook {done}: {_shown(args.url, settings)}{rate}; provider: {_shown(answer or 'ok', settings)}")
    return 0


def show_webhook(args: argparse.Namespace, settings: Settings) -> int:
    with _provider(settings) as client:
        current = client.webhook_read()
    if current is None:
        print("no webhook registered")
        return 1
    rate = f" at {current.rate}/s" if current.rate is not None else ""
    print(f"webhook: {_shown(current.url, settings)}{rate}")
    return 0


def delete_webhook(args: argparse.Namespace, settings: Settings) -> int:
    with _provider(settings) as client:
        answer = client.webhook_delete()
    print(f"webhook deleted; provider: {_shown(answer or 'ok', settings)}")
    return 0
