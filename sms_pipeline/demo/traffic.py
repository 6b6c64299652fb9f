"""Synthetic traffic for one demo day: pure, deterministic from (seed, day).

A realistic mix for two tenants: bulk promotions (one body to many numbers,
so the worker batches them), transactional messages (some in Hindi, so UCS-2
and multi-segment), OTPs with a share of resends inside the correlation
window, a few foreign numbers the provider refuses (`invalidMobile`), sends
scheduled for later in the day, and one scheduled send whose validity ends
before the worker next runs (it must expire, never go out late).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from sms_pipeline.core import msisdn

TENANTS = ("acme", "globex")
SENDERS = {"acme": "ACMEIN", "globex": "GLOBEX"}
# Send waves per provider-local day (hours); the worker runs once per wave.
WAVE_HOURS = (1, 4, 7, 10, 13, 16, 19, 22)
OTP_RESEND_AFTER = timedelta(seconds=45)  # inside the 90 s window, past the provider's 30 s retry limit

DEMO_RATE_CARD = """tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to
acme,sms,otp,0.1200,INR,2026-01-01,
acme,sms,transactional,0.1100,INR,2026-01-01,
acme,sms,promotional,0.0079,INR,2026-01-01,
globex,sms,otp,0.1250,INR,2026-01-01,
globex,sms,transactional,0.1150,INR,2026-01-01,
globex,sms,promotional,0.0085,INR,2026-01-01,
"""

_PROMOTIONS = (
    "Winter sale: 30% off everything until Sunday. Reply STOP to opt out.",
    "Your loyalty points are about to expire. Redeem them at acme.example/points",
)
_TRANSACTIONAL = (
    "Your order {n} has shipped and will arrive in 2 days.",
    "Payment of INR {amount} received for invoice {n}. Thank you.",
    "आपका ऑर्डर {n} भेज दिया गया है। ट्रैक करने के लिए ऐप खोलें। धन्यवाद!",
)
_OTP_TEMPLATE = "Your {tenant} login code is $otp$. It expires in 5 minutes. Never share it."


@dataclass(frozen=True)
class Wave:
    at: datetime
    records: list[dict] = field(default_factory=list)
    resends: list[dict] = field(default_factory=list)  # OTP resends, OTP_RESEND_AFTER later


def _indian_mobile(rng: random.Random) -> str:
    """A valid Indian mobile number (intake refuses landlines, and +91 6-9... holds some)."""
    while True:
        candidate = f"+91{rng.choice('6789')}{rng.randrange(10**9):09d}"
        try:
            msisdn.normalise_mobile(candidate)
        except msisdn.InvalidRecipient:
            continue
        return candidate


def _foreign_mobile(rng: random.Random) -> str:
    """A valid UK mobile number: intake accepts it, the provider (India only) refuses it."""
    while True:
        candidate = f"+447{rng.randrange(10**9):09d}"
        try:
            msisdn.normalise_mobile(candidate)
        except msisdn.InvalidRecipient:
            continue
        return candidate


def day_waves(day: date, day_start: datetime, messages: int, seed: int = 7) -> list[Wave]:
    """The day's traffic as send waves; ``day_start`` is provider-local midnight as an aware instant."""
    rng = random.Random(f"{seed}:{day.isoformat()}")
    per_wave = max(1, messages // len(WAVE_HOURS))
    waves: list[Wave] = []
    for w, hour in enumerate(WAVE_HOURS):
        at = day_start + timedelta(hours=hour, minutes=rng.randrange(30))
        records: list[dict] = []
        resends: list[dict] = []
        promo_body = rng.choice(_PROMOTIONS)
        for i in range(per_wave):
            tenant = TENANTS[i % 2]
            event_id = f"{day.isoformat()}-{w}-{i}"
            kind = rng.random()
            base = {"tenant_id": tenant, "event_id": event_id, "channel": "sms", "sender_id": SENDERS[tenant]}
            if kind < 0.06:
                otp = {**base, "event_type": "login_otp", "recipient": _indian_mobile(rng),
                       "body": _OTP_TEMPLATE.format(tenant=tenant), "message_class": "otp", "purpose": "login"}
                records.append(otp)
                if rng.random() < 0.25:
                    resends.append({**otp, "event_id": event_id + "-resend"})
                continue
            if kind < 0.55:
                body = promo_body
                record = {**base, "event_type": "promotion", "message_class": "promotional", "body": body}
            else:
                body = rng.choice(_TRANSACTIONAL).format(n=rng.randrange(10**6), amount=rng.randrange(100, 9999))
                record = {**base, "event_type": "order_update", "message_class": "transactional", "body": body}
            record["recipient"] = _foreign_mobile(rng) if rng.random() < 0.01 else _indian_mobile(rng)
            if rng.random() < 0.03 and w < len(WAVE_HOURS) - 1:
                record["scheduled_for"] = (at + timedelta(hours=1)).isoformat()
            records.append(record)
        waves.append(Wave(at=at, records=records, resends=resends))
    # One scheduled send whose window closes before the next wave: it must expire, not go out late.
    first = waves[0]
    first.records.append({
        "tenant_id": "acme", "event_type": "flash_sale", "event_id": f"{day.isoformat()}-expiring",
        "channel": "sms", "sender_id": SENDERS["acme"], "message_class": "promotional",
        "recipient": _indian_mobile(rng), "body": "Flash sale starts now, for one hour only!",
        "scheduled_for": (first.at + timedelta(minutes=30)).isoformat(),
        "expires_at": (first.at + timedelta(minutes=90)).isoformat(),
    })
    return waves
