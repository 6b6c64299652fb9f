"""The README's first fenced block, followed literally in a fresh clone and virtual environment."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def first_fenced_block(readme: str) -> str:
    match = re.search(r"```(?:bash|sh)?\n(.*?)```", readme, re.S)
    assert match, "the README has no fenced block"
    return match.group(1).strip()


def test_first_block_is_install_plus_demo():
    block = first_fenced_block((PROJECT_ROOT / "README.md").read_text(encoding="utf-8"))
    assert 'pip install -e ".[dev]"' in block and "sms-pipeline demo" in block


def test_readme_first_block_runs_in_a_fresh_clone(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is needed to clone the project")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(PROJECT_ROOT), str(clone)], check=True)
    block = first_fenced_block((clone / "README.md").read_text(encoding="utf-8"))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SMS_PIPELINE_", "SMS_PROVIDER_", "DAGSTER_", "VIRTUAL_ENV"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    try:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
        assert "sms-pipeline demo: per provider-local day" in done.stdout
        assert "tie-out" in done.stdout
    finally:
        subprocess.run(["bash", "-c", ". .venv/bin/activate && sms-pipeline db stop"], cwd=clone, env=env,
                       capture_output=True, timeout=120)
