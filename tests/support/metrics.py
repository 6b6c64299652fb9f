"""Scraping ``/metrics`` and checking what it exposes: values by name and labels, and the fixed label sets.

The fixed sets are written out here, not imported: they are the contract a
dashboard or an alert relies on, so a new label value must change this file.
"""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

CLASSES = {"otp", "transactional", "promotional"}
STATES = {"pending", "claimed", "sending", "scheduled", "submitted", "rejected", "delivered", "failed", "unknown", "expired",
          "superseded"}
# Every label name any exposed metric may have, with every value it may take.
FIXED_LABELS: dict[str, set[str]] = {
    "class": CLASSES,
    "channel": {"sms", "whatsapp", "voice", "rcs", "telegram"},
    "state": STATES | {"closed", "open", "half_open"},  # message states; the breaker's states
    "outcome": {"submitted", "rejected", "unknown", "released", "expired_unsent", "released_unsent",  # worker rows
                "scheduled", "scheduled_submitted",  # provider-side campaign rows handed over, then due
                "lease_released", "lease_unknown", "pending_expired",  # worker upkeep
                "delivered", "failed", "expired", "intermediate", "unmapped",  # receipt events
                "stored", "duplicate", "malformed", "forbidden", "too_large", "unavailable"},  # receiver answers
    "source": {"day_report", "txn_report", "getdlr", "push"},
    "answer": {"accepted", "refused", "rate_limited", "ambiguous", "never_connected"},
    "reason": {"rate_limited", "breaker_open"},
    "le": {"0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "30.0", "60.0", "+Inf"},
}


def scrape(url: str) -> str:
    response = httpx.get(url, timeout=10)
    assert response.status_code == 200, response.text
    return response.text


def samples(text: str) -> Samples:
    """Every sample of an exposition: (sample name, its labels) -> value."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: Samples, name: str, **labels: str) -> float:
    """One sample's value (KeyError when it is not exposed); ``class_`` stands for the label ``class``."""
    wanted = frozenset((key.rstrip("_"), v) for key, v in labels.items())
    return found[(name, wanted)]


def total(found: Samples, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels`` (``class_`` for ``class``)."""
    wanted = {(key.rstrip("_"), v) for key, v in labels.items()}
    return sum(v for (sample, sample_labels), v in found.items() if sample == name and wanted <= sample_labels)


def assert_fixed_labels(text: str, *, prefix: str = "sms_pipeline_") -> None:
    """Every sample is ours, and each of its labels has a fixed name and a value from that name's fixed set."""
    families = list(text_string_to_metric_families(text))
    assert families, "nothing exposed"
    for family in families:
        assert family.name.startswith(prefix), family.name
        for sample in family.samples:
            for name, label_value in sample.labels.items():
                assert name in FIXED_LABELS, f"{sample.name}: label {name!r} is not one of the fixed names"
                assert label_value in FIXED_LABELS[name], \
                    f"{sample.name}: {name}={label_value!r} is not in the fixed set"
