"""The code stands on its own: references point into docs/, and every one of them resolves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Applied V migrations are history (their checksums are verified): they keep their old wording.
SOURCES = [p for top in ("sms_pipeline", "tests", "bench", "sql", "dbt_project") for p in (ROOT / top).rglob("*")
           if p.is_file() and p.suffix in {".py", ".sql", ".yml", ".md"}
           and "target" not in p.relative_to(ROOT).parts and not re.match(r"V\d+__", p.name)
           and p.name != Path(__file__).name] + [ROOT / "README.md", ROOT / "pyproject.toml"]
REFERENCE = re.compile(r"docs/([a-z-]+\.md)(?:#([a-z0-9-]+))?")
LINK_INTO_DOCS = re.compile(r"\[`[a-z-]+\.md`\]\(docs/[^)]*\)")  # [`design.md`](docs/design.md)
OUTSIDE = re.compile(r"\.\./shared|\bseeds?/|\bseed 00?[03]\b|(?<!docs/)\b(?:design|provider-contract|receipt-cases)\.md")


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    return {_slug(line.lstrip("#")) for line in doc.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


def test_every_docs_reference_resolves():
    anchors = {doc.name: _anchors(doc) for doc in (ROOT / "docs").glob("*.md")}
    broken = [f"{path.relative_to(ROOT)}: docs/{name}{'#' + anchor if anchor else ''}"
              for path in SOURCES for name, anchor in REFERENCE.findall(path.read_text(encoding="utf-8"))
              if name not in anchors or (anchor and anchor not in anchors[name])]
    assert broken == []


def test_nothing_points_outside_the_repository():
    outside = [f"{path.relative_to(ROOT)}:{n}" for path in SOURCES
               for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if OUTSIDE.search(LINK_INTO_DOCS.sub("", line))]
    assert outside == []
