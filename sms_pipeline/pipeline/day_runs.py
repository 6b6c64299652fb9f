"""Running a day-partitioned asset over a range, one committed day at a time."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date
from typing import Any, TypeVar

import dagster as dg

Result = TypeVar("Result")


def day_by_day(
    context: dg.AssetExecutionContext,
    work: Callable[[date], Result],
    metadata: Callable[[Result], Mapping[str, Any]],
    *,
    skippable: tuple[type[BaseException], ...] = (),
) -> dg.MaterializeResult:
    """Run ``work`` for each day of the run, in order, each committing on its own.

    A day failing with one of ``skippable`` (e.g. a provider-side problem with
    that day's report) does not stop the others; anything else stops the run
    at once (later days depend on earlier ones, or the database is gone).
    Either way the days that finished are recorded as materialised before the
    run fails, so a relaunch does not redo them.
    """
    finished: dict[str, Mapping[str, Any]] = {}
    failed: dict[str, str] = {}
    try:
        for key in context.partition_keys:
            try:
                result = work(date.fromisoformat(key))
            except skippable as exc:
                context.log.error(str(exc))
                failed[key] = str(exc)
                continue
            finished[key] = metadata(result)
            context.log.info(f"{context.asset_key.to_user_string()} {key}: {_one_line(finished[key])}")
    except BaseException:
        _record(context, finished)
        raise
    if not failed:
        for key, meta in finished.items():
            context.add_asset_metadata(meta, partition_key=key)
        return dg.MaterializeResult()
    _record(context, finished)
    raise dg.Failure(
        description=f"{len(failed)} of {len(context.partition_keys)} day(s) failed: " + "; ".join(failed.values()),
        metadata={"failed_days": sorted(failed), "finished_days": sorted(finished)},
    )


def _record(context: dg.AssetExecutionContext, finished: Mapping[str, Mapping[str, Any]]) -> None:
    for key, meta in finished.items():
        context.log_event(dg.AssetMaterialization(asset_key=context.asset_key, partition=key, metadata=meta))


def _one_line(meta: Mapping[str, Any]) -> str:
    """The scalar figures, for the run log."""
    return ", ".join(f"{name}={value}" for name, value in meta.items() if isinstance(value, (str, int, float)))
