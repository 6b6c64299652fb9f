"""A legacy sends table as the adoption reads it: its columns, and one row of it.

The legacy table has the seed's usual shape, ``sends(id, phone, message,
sent, response, created_at)``; a TOML file renames any of those columns and
may name a business-event column (``event``), whose value becomes the event
id of the row's business key (docs/adoption.md).

    [columns]
    id = "send_id"
    phone = "msisdn"
    event = "order_ref"
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sms_pipeline.errors import UserError


@dataclass(frozen=True)
class LegacyRow:
    id: int  # legacy primary key
    phone: str  # one number or a comma-joined list
    message: str
    sent: bool | None
    response: str | None  # the provider's raw answer as the legacy sender stored it
    created_at: datetime | None  # aware; None: the legacy column was NULL (the row is refused)
    event: str | None = None  # the business-event column, when mapped


@dataclass(frozen=True)
class ColumnMap:
    table: str
    id: str = "id"
    phone: str = "phone"
    message: str = "message"
    sent: str = "sent"
    response: str = "response"
    created_at: str = "created_at"
    event: str | None = None

    def columns(self) -> dict[str, str]:
        """Our name -> the legacy column, for every mapped column (``event`` only when set)."""
        names = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "table"}
        return {ours: theirs for ours, theirs in names.items() if theirs is not None}


_KEYS = tuple(f.name for f in dataclasses.fields(ColumnMap) if f.name != "table")


def load_column_map(table: str, path: Path | None) -> ColumnMap:
    """The seed's column names, renamed by the ``[columns]`` table of the TOML file at ``path`` (if any)."""
    if not table:
        raise UserError("--table must name the legacy table")
    if path is None:
        return ColumnMap(table)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read the column map {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"the column map {path} is not valid TOML: {exc}") from None
    extra = sorted(set(document) - {"columns"})
    if extra:
        raise UserError(f"the column map {path}: unknown table or key {extra[0]!r} (only [columns] is read)")
    columns = document.get("columns", {})
    if not isinstance(columns, dict):
        raise UserError(f"the column map {path}: [columns] must be a table")
    for key, value in columns.items():
        if key not in _KEYS:
            raise UserError(f"the column map {path}: unknown column key {key!r} (known: {', '.join(_KEYS)})")
        if not isinstance(value, str) or not value:
            raise UserError(f"the column map {path}: columns.{key} must be a non-empty string")
    mapped = ColumnMap(table, **columns)
    theirs = list(mapped.columns().values())
    if len(set(theirs)) != len(theirs):
        raise UserError(f"the column map {path}: two keys name the same legacy column")
    return mapped
