"""The command table of ``sms_pipeline.cli``: a command line imports only its command's module."""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys

from sms_pipeline import cli
from tests.support.environment import app_environ


def _registered(module: str) -> tuple[str, ...]:
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module).register(sub)
    return tuple(sub.choices)


def test_each_module_registers_exactly_the_commands_the_table_names():
    assert {module: _registered(module) for module in cli.COMMAND_MODULES} == cli.COMMAND_MODULES


def test_a_command_builds_only_its_modules_parser_and_help_builds_every_one():
    health = cli.build_parser(["--verbose", "health", "--json"])
    assert set(health._subparsers._group_actions[0].choices) == {"health"}
    everything = cli.build_parser(["--help"])
    assert set(everything._subparsers._group_actions[0].choices) == {
        command for commands in cli.COMMAND_MODULES.values() for command in commands}


def test_the_health_command_line_does_not_import_the_other_commands_modules():
    probe = ("import sys; from sms_pipeline import cli; cli.build_parser(['health']); "
             "print(*sorted(m for m in sys.modules if m.startswith('sms_pipeline.cli.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.split() == ["sms_pipeline.cli.health_cmd"]


def test_output_piped_into_a_reader_that_stopped_is_not_a_failure(tmp_path):
    # `sms-pipeline settings | head -1`: the reader has closed the pipe before the command writes.
    read_end, write_end = os.pipe()
    os.close(read_end)
    command = [sys.executable, "-c", "import sys; from sms_pipeline.cli import main; sys.exit(main())", "settings"]
    try:
        # Its own home and folder: the command writes its log under SMS_PIPELINE_HOME, never into the checkout.
        writer = subprocess.run(command, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60,
                                cwd=tmp_path, env=app_environ(SMS_PIPELINE_HOME=str(tmp_path / "home")))
    finally:
        os.close(write_end)
    assert writer.returncode == 141, writer.stderr
    assert "unexpected" not in writer.stderr and "Traceback" not in writer.stderr
