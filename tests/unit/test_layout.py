"""The package's dependencies point one way: the import-linter contracts in pyproject.toml hold.

import-linter runs in a subprocess: in-process it reconfigures logging and
disables every logger that already exists (the project's among them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"


def _lint_imports(cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    check = (f"import sys; from importlinter.cli import lint_imports; "
             f"sys.exit(lint_imports(config_filename={str(PYPROJECT)!r}, no_cache=True, no_logo=True))")
    return subprocess.run([sys.executable, "-c", check], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def test_import_contracts_hold(tmp_path: Path) -> None:
    result = _lint_imports(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The contract has teeth: a copy of the package whose core imports the database layer is refused."""
    shutil.copytree(ROOT / "sms_pipeline", tmp_path / "sms_pipeline",
                    ignore=shutil.ignore_patterns("__pycache__", "_files"))
    (tmp_path / "sms_pipeline" / "core" / "upward.py").write_text(
        "from sms_pipeline.db import connection  # noqa: F401\n", encoding="utf-8")
    result = _lint_imports(tmp_path, PYTHONPATH=str(tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "sms_pipeline.core.upward -> sms_pipeline.db" in result.stdout
