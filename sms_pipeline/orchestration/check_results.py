"""The asset checks a run failed, one line each, for a person at a terminal.

Checks are the project's Python checks (e.g. the health readings) and the
dbt tests, which dagster-dbt turns into checks (severity from the test's
config: ``error`` -> ERROR, ``warn`` -> WARN). A line names the asset, the
check and what it found: the check's own description when it has one (the
health readings write figures there), else the number of failing rows dbt
counted. Never the rows themselves: no recipient numbers, no message text;
a run of digits as long as a phone number in a description is masked all the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import dagster as dg

DBT_FAILED_ROWS = "dagster_dbt/failed_row_count"
# A run of 9 or more digits may hold a phone number (or two run together); no count or amount here is that
# long. Only a run of exactly 19 or 20 digits is left as it is: a provider id (a transaction's uuId), which the
# schedule cross-check names on purpose, never a number (15 digits at most).
_LONG_NUMBER = re.compile(r"(?<!\d)(?!\d{19,20}(?!\d))\d{9,}")
_MAX_DETAIL = 200


@dataclass(frozen=True)
class FailedCheck:
    asset: str
    name: str
    severity: str  # "ERROR" or "WARN"
    detail: str

    @property
    def is_error(self) -> bool:
        return self.severity == dg.AssetCheckSeverity.ERROR.value

    def line(self) -> str:
        return f"check failed ({self.severity}): {self.asset} {self.name}: {self.detail}"


def failed_checks(evaluations: Sequence[dg.AssetCheckEvaluation]) -> list[FailedCheck]:
    """The failed evaluations, ERROR first (a check evaluated per partition: once per failed partition)."""
    failed = {
        (e.asset_key.to_user_string(), e.check_name, e.partition): FailedCheck(
            e.asset_key.to_user_string() + (f" {e.partition}" if e.partition else ""),
            e.check_name, e.severity.value, _detail(e))
        for e in evaluations if not e.passed
    }
    return sorted(failed.values(), key=lambda f: (not f.is_error, f.asset, f.name))


def _detail(evaluation: dg.AssetCheckEvaluation) -> str:
    text = (evaluation.description or "").strip().splitlines()
    if text:
        detail = _LONG_NUMBER.sub("…", text[0])
        return detail if len(detail) <= _MAX_DETAIL else detail[: _MAX_DETAIL - 1] + "…"
    rows = evaluation.metadata.get(DBT_FAILED_ROWS)
    if rows is not None:
        return f"{rows.value} failing row(s)"
    return "failed"
