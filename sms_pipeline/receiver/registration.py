"""Register the receiver's URL with the provider: create, or change what is registered."""

from __future__ import annotations

from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import WebhookRegistration


def register(client: ProviderClient, url: str, rate: int | None) -> tuple[str, WebhookRegistration | None]:
    """Point the provider's receipt pushes at ``url`` (``rate`` per second, None: the provider's default).

    Returns the provider's message and the registration it replaced (None: there was none). The provider
    keeps one URL per account, so a second registration is an update.
    """
    current = client.webhook_read()
    if current is None:
        return client.webhook_create(url, rate), None
    return client.webhook_update(url, rate), current
