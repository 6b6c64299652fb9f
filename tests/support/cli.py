"""``run``: the ``sms-pipeline`` command in this process, as a test's user would type it.

It runs against ``cli_database_url`` (the test's fresh database unless a
module overrides it) with a private home folder and ``cli_variables`` (more
variables, which a module overrides), and with none of the application's
variables the developer's own shell may have set.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from sms_pipeline import cli
from tests.support.environment import app_environ


@pytest.fixture
def cli_database_url(db_url: str) -> str:
    """The database the commands work on; a module with a shared database overrides it."""
    return db_url


@pytest.fixture
def cli_variables() -> dict[str, str]:
    """More variables every command of the test runs with; a module overrides it."""
    return {}


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cli_database_url: str,
        tmp_path: Path, cli_variables: dict[str, str]) -> Callable[..., tuple[int, str, str]]:
    """``sms-pipeline ARGS`` in this process; returns (exit code, stdout, stderr).

    Keyword arguments are variables set from that command on (e.g. the provider's address).
    """
    variables = {"SMS_PIPELINE_DATABASE_URL": cli_database_url, "SMS_PIPELINE_HOME": str(tmp_path / "home"),
                 **cli_variables}
    for name in set(os.environ) - set(app_environ()):
        monkeypatch.delenv(name)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)

    def run_command(*args: str, **more: str) -> tuple[int, str, str]:
        for name, value in more.items():
            monkeypatch.setenv(name, value)
        code = cli.main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run_command


def write_lines(path: Path, lines: list[str]) -> Path:
    """A JSON-lines (or any line) file for a CLI command to read."""
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
