"""Running a day-partitioned asset over a range, one committed day at a time."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date
from typing import Any, TypeVar

import dagster as dg

Result = TypeVar("Result")


Metadata = Callable[[Result], Mapping[str, Any]]


def day_by_day(
    context: dg.AssetExecutionContext,
    work: Callable[[date], Result],
    metadata: Metadata | Mapping[dg.AssetKey, Metadata],
    *,
    skippable: tuple[type[BaseException], ...] = (),
    stops: tuple[type[BaseException], ...] = (),
) -> dg.MaterializeResult | tuple[dg.MaterializeResult, ...]:
    """Run ``work`` for each day of the run, in order, each committing on its own.

    ``metadata`` turns a day's result into its materialisation metadata: one
    function for a single asset, one per asset key for a multi-asset whose
    assets the same work materialises.

    A day failing with one of ``skippable`` (e.g. a provider-side problem with
    that day's report) does not stop the others; anything else stops the run
    at once (later days depend on earlier ones, or the database is gone).
    A day failing with one of ``stops`` (a refusal a person must look at,
    e.g. a report that would shrink) stops the run too, as a ``Failure`` whose
    description is the error's own line, the days after it left unattempted.
    Either way the days that finished are recorded as materialised before the
    run fails, so a relaunch does not redo them.
    """
    per_asset = metadata if isinstance(metadata, Mapping) else {context.asset_key: metadata}
    finished: dict[str, dict[dg.AssetKey, Mapping[str, Any]]] = {}
    failed: dict[str, str] = {}
    try:
        for key in context.partition_keys:
            try:
                result = work(date.fromisoformat(key))
            except skippable as exc:
                context.log.error(str(exc))
                failed[key] = str(exc)
                continue
            except stops as exc:
                context.log.error(str(exc))
                earlier = f" ({len(failed)} earlier day(s) failed too: {'; '.join(failed.values())})" if failed else ""
                raise dg.Failure(
                    description=f"{exc}{earlier}",
                    metadata={"stopped_at_day": key, "failed_days": sorted({*failed, key}),
                              "finished_days": sorted(finished)},
                ) from None
            finished[key] = {asset: describe(result) for asset, describe in per_asset.items()}
            for asset, meta in finished[key].items():
                context.log.info(f"{asset.to_user_string()} {key}: {_one_line(meta)}")
    except BaseException:
        _record(context, finished)
        raise
    if not failed:
        for key, metas in finished.items():
            for asset, meta in metas.items():
                context.add_asset_metadata(meta, asset_key=asset, partition_key=key)
        results = tuple(dg.MaterializeResult(asset_key=asset) for asset in per_asset)
        return results[0] if len(results) == 1 else results
    _record(context, finished)
    raise dg.Failure(
        description=f"{len(failed)} of {len(context.partition_keys)} day(s) failed: " + "; ".join(failed.values()),
        metadata={"failed_days": sorted(failed), "finished_days": sorted(finished)},
    )


def _record(context: dg.AssetExecutionContext, finished: Mapping[str, Mapping[dg.AssetKey, Mapping[str, Any]]]) -> None:
    for key, metas in finished.items():
        for asset, meta in metas.items():
            context.log_event(dg.AssetMaterialization(asset_key=asset, partition=key, metadata=meta))


def _one_line(meta: Mapping[str, Any]) -> str:
    """The scalar figures, for the run log."""
    return ", ".join(f"{name}={value}" for name, value in meta.items() if isinstance(value, (str, int, float)))
