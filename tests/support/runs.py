"""Dagster runs in process: the project's resources on a pinned clock, and what the runs reported."""

from __future__ import annotations

from typing import Any

import dagster as dg

from sms_pipeline.core.clock import Clock
from sms_pipeline.orchestration.resources import ClockResource, build_resources
from sms_pipeline.settings import Settings


def resources_for(settings: Settings, clock: Clock) -> dict[str, Any]:
    """The project's resources for ``settings``, the clock pinned to ``clock``'s now.

    Their secrets are inline: the tests' settings come from a mapping, not the process environment.
    """
    return {
        **build_resources(settings, secrets_by_name=False),
        "clock": ClockResource(frozen_at=clock.now().isoformat()),
    }


def materialization_events(result: dg.ExecuteInProcessResult,
                           key: dg.AssetKey | str) -> list[tuple[str | None, dict]]:
    """(partition, metadata values) of each of ``key``'s materialisations in ``result``, in order."""
    if isinstance(key, str):
        key = dg.AssetKey.from_user_string(key)
    found = []
    for event in result.get_asset_materialization_events():
        m = event.event_specific_data.materialization
        if m.asset_key == key:
            found.append((m.partition, {name: plain(value) for name, value in m.metadata.items()}))
    return found


def plain(value: dg.MetadataValue) -> Any:
    """A metadata value as Python: a table of counts by name (statuses, state moves) as a dict."""
    if isinstance(value, dg.TableMetadataValue) and [c.name for c in value.schema.columns] == ["name", "count"]:
        return {record.data["name"]: record.data["count"] for record in value.records}
    return value.value


def materializations(result: dg.ExecuteInProcessResult, key: dg.AssetKey | str) -> dict[str | None, dict]:
    """Partition -> metadata values of ``key``'s materialisations in ``result``."""
    return dict(materialization_events(result, key))


def metadata_of(result: dg.ExecuteInProcessResult, key: dg.AssetKey | str) -> dict:
    """The metadata values of ``key``'s one materialisation in ``result`` (there must be exactly one)."""
    ((_, metadata),) = materialization_events(result, key)
    return metadata
