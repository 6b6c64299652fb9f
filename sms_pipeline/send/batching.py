"""Grouping claimed rows into provider requests (pure).

One request carries one text to many numbers, so rows share a request only
when everything the provider sees besides the number is equal: tenant (one
account's bill), channel, sender, body, message type, and the template and
DLT ids. A number never appears twice in one request: the provider's
``duplicatecheck`` would drop one of them without saying which, and
correlation by transaction + recipient would become ambiguous. The k-th
occurrence of a number goes to the k-th "lane" of its group, and each lane
is cut into requests of at most ``batch_size`` numbers. The rows of a
provider-side campaign (:func:`plan_campaign_requests`) are grouped by
campaign and time as well, in requests of at most the campaign request size.

With the provider's XML multi-message send (:func:`plan_personalised_requests`),
rows whose body is theirs alone in this claim travel together although their
bodies differ: then only tenant, channel, class, sender, message type and
DLT entity id must be equal (body and template ids go per message), still
never one number twice in a request, at most ``min(batch_size, 1000)``
messages. A body shared by several rows of the claim still goes as one
quick send to all of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sms_pipeline.provider.normalise import xml_safe
from sms_pipeline.provider.results import MAX_MESSAGES_PER_REQUEST
from sms_pipeline.send.claim import ClaimedMessage

MSG_TYPES = {"GSM7": "text", "UCS2": "unicode"}


@dataclass(frozen=True, slots=True)
class SendBatch:
    """Rows that go out in one provider request.

    ``personalised``: an XML multi-message send; then ``body``,
    ``template_id`` and ``dlt_template_id`` are empty here and each
    message carries its own.
    """

    tenant_id: str
    channel: str
    message_class: str
    sender_id: str | None
    body: str = field(repr=False)
    msg_type: str
    template_id: str | None
    dlt_entity_id: str | None
    dlt_template_id: str | None
    messages: tuple[ClaimedMessage, ...]
    personalised: bool = False

    @property
    def ids(self) -> list[int]:
        return [m.id for m in self.messages]

    @property
    def created_ats(self) -> list[datetime]:
        """The rows' distinct partition keys: with the ids, they let statements skip other months.

        Distinct, because a request's rows usually came in by one intake
        (one ``created_at``), and psycopg dumps a list element by element.
        """
        return sorted({m.created_at for m in self.messages})

    @property
    def recipients(self) -> list[str]:
        return [m.recipient for m in self.messages]

    @property
    def first_attempt_key(self) -> str:
        """Names the request in logs (every row's own key is logged at debug level)."""
        return str(self.messages[0].attempt_key)

    def __len__(self) -> int:
        return len(self.messages)


def msg_type(encoding: str) -> str:
    try:
        return MSG_TYPES[encoding]
    except KeyError:
        raise ValueError(f"no provider message type for encoding {encoding!r}") from None


def _request_key(m: ClaimedMessage) -> tuple:
    return (m.tenant_id, m.channel, m.message_class, m.sender_id, m.body, msg_type(m.encoding),
            m.template_id, m.dlt_entity_id, m.dlt_template_id)


def _campaign_key(m: ClaimedMessage) -> tuple:
    return (m.campaign_id, m.scheduled_for, *_request_key(m))


def _personalised_key(m: ClaimedMessage) -> tuple:
    return (m.tenant_id, m.channel, m.message_class, m.sender_id, msg_type(m.encoding), m.dlt_entity_id)


def _lanes(messages: Iterable[ClaimedMessage], key_of) -> dict[tuple, list[list[ClaimedMessage]]]:
    """Rows by request key, each key's rows in lanes: the k-th row of a number in lane k."""
    lanes_by_key: dict[tuple, list[list[ClaimedMessage]]] = {}
    seen: dict[tuple, dict[str, int]] = {}
    for m in messages:
        key = key_of(m)
        lanes = lanes_by_key.setdefault(key, [])
        counts = seen.setdefault(key, {})
        lane = counts.get(m.recipient, 0)
        counts[m.recipient] = lane + 1
        if lane == len(lanes):
            lanes.append([])
        lanes[lane].append(m)
    return lanes_by_key


def _quick_send(messages: tuple[ClaimedMessage, ...]) -> SendBatch:
    """One quick send of rows that share everything but the number (the first row speaks for them)."""
    m = messages[0]
    return SendBatch(m.tenant_id, m.channel, m.message_class, m.sender_id, m.body, msg_type(m.encoding),
                     m.template_id, m.dlt_entity_id, m.dlt_template_id, messages)


def _plan(messages: Iterable[ClaimedMessage], batch_size: int, key_of) -> list[SendBatch]:
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, got {batch_size}")
    return [_quick_send(tuple(lane[start:start + batch_size]))
            for lanes in _lanes(messages, key_of).values()
            for lane in lanes
            for start in range(0, len(lane), batch_size)]


def plan_requests(messages: Iterable[ClaimedMessage], batch_size: int) -> list[SendBatch]:
    """Requests for ``messages``, in the order their groups first appear."""
    return _plan(messages, batch_size, _request_key)


def plan_campaign_requests(messages: Iterable[ClaimedMessage], request_size: int) -> list[SendBatch]:
    """Requests of provider-side campaign rows, each sent with its campaign's scheduleTime.

    As :func:`plan_requests`, and a request never mixes two campaigns nor two
    times: one request becomes one provider campaign, whose transactions are
    cancelled or moved together with ours. Rows keep their order (the
    provider splits a request into transactions in request order).
    """
    return _plan(messages, request_size, _campaign_key)


def plan_personalised_requests(messages: Iterable[ClaimedMessage], batch_size: int) -> list[SendBatch]:
    """Requests for ``messages`` when the provider has the XML send.

    A body (with its template ids) that several rows share goes as quick
    sends, exactly as :func:`plan_requests` plans them; the rows whose body
    is theirs alone go in XML requests of at most ``min(batch_size, 1000)``
    messages, one per personalised key and lane. An XML request of one
    message is made a quick send (the same thing, the simpler request), and
    so is a body XML cannot carry (a control character).
    """
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, got {batch_size}")
    rows = list(messages)
    group_sizes: dict[tuple, int] = {}
    for m in rows:
        key = _request_key(m)
        group_sizes[key] = group_sizes.get(key, 0) + 1
    shared, alone = [], []
    for m in rows:
        (alone if group_sizes[_request_key(m)] == 1 and xml_safe(m.body) else shared).append(m)
    batches = plan_requests(shared, batch_size)
    limit = min(batch_size, MAX_MESSAGES_PER_REQUEST)
    for key, lanes in _lanes(alone, _personalised_key).items():
        tenant_id, channel, message_class, sender_id, type_, entity_id = key
        for lane in lanes:
            for start in range(0, len(lane), limit):
                chunk = tuple(lane[start:start + limit])
                if len(chunk) == 1:
                    batches.extend(plan_requests(chunk, batch_size))
                else:
                    batches.append(SendBatch(tenant_id, channel, message_class, sender_id, "", type_, None,
                                             entity_id, None, chunk, personalised=True))
    return batches
