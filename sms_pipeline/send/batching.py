"""Grouping claimed rows into provider requests (pure).

One request carries one text to many numbers, so rows share a request only
when everything the provider sees besides the number is equal: tenant (one
account's bill), channel, sender, body, message type, and the template and
DLT ids. A number never appears twice in one request: the provider's
``duplicatecheck`` would drop one of them without saying which, and
correlation by transaction + recipient would become ambiguous. The k-th
occurrence of a number goes to the k-th "lane" of its group, and each lane
is cut into requests of at most ``batch_size`` numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sms_pipeline.send.claim import ClaimedMessage

MSG_TYPES = {"GSM7": "text", "UCS2": "unicode"}


@dataclass(frozen=True, slots=True)
class SendBatch:
    """Rows that go out in one provider request."""

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


def plan_requests(messages: Iterable[ClaimedMessage], batch_size: int) -> list[SendBatch]:
    """Requests for ``messages``, in the order their groups first appear."""
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, got {batch_size}")
    lanes_by_key: dict[tuple, list[list[ClaimedMessage]]] = {}
    seen: dict[tuple, dict[str, int]] = {}
    for m in messages:
        key = _request_key(m)
        lanes = lanes_by_key.setdefault(key, [])
        counts = seen.setdefault(key, {})
        lane = counts.get(m.recipient, 0)
        counts[m.recipient] = lane + 1
        if lane == len(lanes):
            lanes.append([])
        lanes[lane].append(m)
    batches = []
    for key, lanes in lanes_by_key.items():
        tenant_id, channel, message_class, sender_id, body, type_, template_id, entity_id, dlt_template = key
        for lane in lanes:
            for start in range(0, len(lane), batch_size):
                batches.append(SendBatch(tenant_id, channel, message_class, sender_id, body, type_,
                                         template_id, entity_id, dlt_template,
                                         tuple(lane[start:start + batch_size])))
    return batches
