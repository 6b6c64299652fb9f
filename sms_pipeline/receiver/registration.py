"""Register the receiver's URL with the provider: create, or change what is registered."""

from __future__ import annotations

import logging

from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import ProviderCallError, WebhookRegistration

log = logging.getLogger(__name__)

ATTEMPTS = 3


def register(client: ProviderClient, url: str, rate: int | None) -> tuple[str, WebhookRegistration | None]:
    """Point the provider's receipt pushes at ``url`` (``rate`` per second, None: the provider's default).

    Returns the provider's message and the registration it replaced (None: there was none). The provider
    keeps one URL per account, so a second registration is an update. A create or update is not retried
    blindly (it may have taken effect before its answer was lost): the registration is read again first,
    and one already as asked is left as it is.
    """
    for attempt in range(1, ATTEMPTS + 1):
        current = client.webhook_read()
        if current is not None and current.url == url and rate in (None, current.rate):
            return "already registered", None
        try:
            if current is None:
                return client.webhook_create(url, rate), None
            return client.webhook_update(url, rate), current
        except ProviderCallError as exc:
            if attempt == ATTEMPTS:
                raise
            log.warning("webhook registration failed (%s); reading the registration again", type(exc).__name__)
    raise AssertionError("unreachable")
