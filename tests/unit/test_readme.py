"""The README stays true to the code: every setting documented, the two commands first."""

import re
from pathlib import Path

from sms_pipeline import settings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_every_setting_is_documented():
    missing = [env for env, _, _ in settings.describe() if f"`{env}`" not in README]
    assert not missing


def test_the_first_two_blocks_are_install_plus_demo_then_the_ci_test_command():
    blocks = re.findall(r"```(?:bash|sh)?\n(.*?)```", README, re.S)
    assert "sms-pipeline demo" in blocks[0] and 'pip install -e ".[dev]"' in blocks[0]
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text(encoding="utf-8")
    test_command = blocks[1].strip().split("&&")[-1].strip()
    assert re.search(rf"^{re.escape(test_command)}$", ci, re.M), test_command
