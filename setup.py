"""Build hook: the project's non-Python files go into the package.

``sql/``, ``dbt_project/`` and ``dagster.yaml.template`` stay at the top of
the repository. The wheel (and the sdist's file list) carries them under
``sms_pipeline/_files/``, which ``sms_pipeline.package_files`` reads; an
editable install reads the originals where they are. dbt's build output
(``target/``, ``logs/``, ``dbt_packages/``) is never shipped.

Everything else about the package is declared in pyproject.toml.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PACKAGED_DIR = ("sms_pipeline", "_files")  # sms_pipeline.package_files.PACKAGED_DIR
SOURCES = ("sql", "dbt_project", "dagster.yaml.template")
_DBT_OUTPUT = {"target", "logs", "dbt_packages"}


def _shipped(path: Path) -> bool:
    parts = path.relative_to(HERE).parts
    if parts[0] == "dbt_project" and len(parts) > 2 and parts[1] in _DBT_OUTPUT:
        return False
    return not any(part.startswith(".") or part == "__pycache__" for part in parts)


def project_files() -> list[str]:
    """The shipped files, as paths relative to the repository's top."""
    found: list[str] = []
    for name in SOURCES:
        top = HERE / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        found += [p.relative_to(HERE).as_posix() for p in candidates if p.is_file() and _shipped(p)]
    missing = [name for name in SOURCES if not (HERE / name).exists()]
    if missing:
        raise SystemExit(f"setup.py: {', '.join(missing)} missing at the top of the repository")
    return found


class BuildPyWithProjectFiles(build_py):
    """``build_py`` whose package data also maps the top-level files into ``sms_pipeline/_files``."""

    def _project_data(self) -> tuple[str, str, str, list[str]]:
        # (package, source folder, build folder, file names relative to both); like
        # every path setuptools handles, the source folder is relative to the
        # repository's top, where builds run.
        return ("sms_pipeline", "", os.path.join(self.build_lib, *PACKAGED_DIR), project_files())

    def _get_data_files(self):  # what the wheel copies
        return [*super()._get_data_files(), self._project_data()]

    def get_data_files_without_manifest(self):  # what the sdist's file list takes
        return [*super().get_data_files_without_manifest(), self._project_data()]


setup(cmdclass={"build_py": BuildPyWithProjectFiles})
