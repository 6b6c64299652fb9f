"""The package's dependencies point one way: the import-linter contracts in pyproject.toml hold."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"


def test_import_contracts_hold(tmp_path: Path) -> None:
    # A private cache directory: parallel test workers must not share one.
    assert lint_imports(config_filename=str(PYPROJECT), cache_dir=str(tmp_path), no_logo=True) == 0


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The contract has teeth: a copy of the package whose core imports the database layer is refused."""
    shutil.copytree(ROOT / "sms_pipeline", tmp_path / "sms_pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "sms_pipeline" / "core" / "upward.py").write_text(
        "from sms_pipeline.db import connection  # noqa: F401\n", encoding="utf-8")
    check = (f"import sys; from importlinter.cli import lint_imports; "
             f"sys.exit(lint_imports(config_filename={str(PYPROJECT)!r}, no_cache=True, no_logo=True))")
    result = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "sms_pipeline.core.upward -> sms_pipeline.db" in result.stdout
