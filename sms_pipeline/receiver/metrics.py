"""The receiver's Prometheus metrics: its answers to pushes, by outcome, on ``GET /metrics``.

Read at scrape time from the counts ``GET /healthz`` shows (one set per
process, touched only on the event loop), so a push costs nothing more.
The outcome values are the fixed names of those counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry


class PushCounts(Collector):
    def __init__(self, counts: Callable[[], Mapping[str, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily("sms_pipeline_receiver_pushes",
                                     "Receipt pushes this process answered, by outcome", labels=("outcome",))
        for outcome, count in self._counts().items():
            family.add_metric((outcome,), count)
        yield family


def registry(counts: Callable[[], Mapping[str, int]]) -> CollectorRegistry:
    """A registry of one receiver's push counts."""
    own = CollectorRegistry()
    own.register(PushCounts(counts))
    return own
