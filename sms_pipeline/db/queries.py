"""Named SQL shared by the worker, the pipeline and the health checks.

Each query lives in ``sql/queries/<name>.sql`` so that the text the code runs
is the text the index tests EXPLAIN. Parameters are psycopg named
placeholders (``%(now)s``); each file's header lists them.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

QUERIES_DIR = Path(__file__).resolve().parents[2] / "sql" / "queries"
_NAME = re.compile(r"^[a-z0-9_]+$")


class UnknownQuery(LookupError):
    """No ``sql/queries/<name>.sql`` (or a name that is not a plain file stem)."""


@functools.cache
def load(name: str) -> str:
    """The text of ``sql/queries/<name>.sql`` (read once, then cached)."""
    if not _NAME.match(name):
        raise UnknownQuery(f"query name must be lower-case letters, digits and underscores: {name!r}")
    path = QUERIES_DIR / f"{name}.sql"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UnknownQuery(f"no query named {name!r} in {QUERIES_DIR}") from None

