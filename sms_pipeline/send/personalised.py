"""Personalised SMS: a different body per recipient, many of them in one request.

:class:`PersonalisedSmsStrategy` serves the transactional and promotional
SMS queues when the provider has the XML multi-message send
(``SMS_PROVIDER_XML_SEND``, on by default). Planning
(:func:`~sms_pipeline.send.batching.plan_personalised_requests`) keeps a body
shared by several rows on the quick send and puts the rows whose body is
their own into XML requests; ``send`` makes whichever request the batch is.

Both answers are matched to the request's numbers by the client
(``SendAccepted.accepted`` / ``invalid`` / ``unlisted``) and written like any
other (``apply_outcome``: a recipient in neither list is ``unknown``;
docs/design.md#send-outcomes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sms_pipeline.core.states import MessageClass
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import PersonalisedSms
from sms_pipeline.send.batching import SendBatch, plan_personalised_requests
from sms_pipeline.send.campaigns import CampaignStrategy
from sms_pipeline.send.claim import ClaimedMessage
from sms_pipeline.send.loop import BulkSmsStrategy, QueueKey, Sent, SendStrategy


@dataclass(frozen=True)
class PersonalisedSmsStrategy(BulkSmsStrategy):
    """Transactional and promotional SMS through quick sends and XML multi-message sends."""

    def plan(self, messages: Sequence[ClaimedMessage], batch_size: int) -> list[SendBatch]:
        return plan_personalised_requests(messages, batch_size)

    def send(self, batch: SendBatch) -> Sent:
        if not batch.personalised:
            return super().send(batch)
        messages = [PersonalisedSms(m.recipient, m.body, m.dlt_template_id) for m in batch.messages]
        outcome = self.client.send_personalised(messages, batch.sender_id or "", batch.msg_type,
                                                dlt_entity_id=batch.dlt_entity_id)
        return Sent(batch, outcome)


def sms_strategies(client: ProviderClient, price_time_zone: str, *, xml_send: bool,
                   campaign_request_size: int) -> dict[QueueKey, SendStrategy]:
    """The SMS strategies for transactional and promotional traffic: personalised when the provider has the XML send.

    ``campaign_request_size`` (``SMS_PIPELINE_CAMPAIGN_REQUEST_SIZE``): provider-side campaigns are handed over
    ahead of their time in requests of up to that many numbers.
    """
    campaigns = CampaignStrategy(client, price_time_zone, campaign_request_size)
    kind = PersonalisedSmsStrategy if xml_send else BulkSmsStrategy
    strategy = kind(client, price_time_zone, campaigns=campaigns)
    return {("sms", MessageClass.transactional.value): strategy, ("sms", MessageClass.promotional.value): strategy}
