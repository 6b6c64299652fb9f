"""Where the dbt project lives and how its manifest gets made.

The manifest (``dbt_project/target/manifest.json``) is generated, never
committed: a fresh clone, ``dagster dev``, the demo and CI all get it from
``prepare_manifest()``, which runs ``dbt parse`` when the manifest is missing
or older than any file of the project (so an edited model is picked up on
the next load, like ``DbtProject.prepare_if_dev`` does under ``dagster dev``,
but everywhere). Concurrent callers (pytest workers, Dagster processes)
parse once: the preparer holds a file lock and skips work another process
finished meanwhile.

An installed copy of the project (the wheel's, in site-packages) is only
read: its manifest, dbt's logs and every run's artifacts go under
``SMS_PIPELINE_HOME`` or a temporary folder, never beside the project. dbt
itself is the one installed with the package (``package_files.console_script``),
so an un-activated virtualenv works.
"""

from __future__ import annotations

import functools
import getpass
from collections.abc import Mapping
from typing import Any
import hashlib
import logging
import os
import tempfile
from pathlib import Path

from dagster_dbt import DbtCliResource, DbtProject
from filelock import FileLock

from sms_pipeline import package_files
from sms_pipeline.marts.dbt_env import DBT_ENV_NAMES, dbt_environment

log = logging.getLogger(__name__)

DBT_PROJECT_DIR = package_files.dbt_project_dir()

_PARSE_WAIT_S = 600
_SOURCE_SUFFIXES = {".sql", ".yml", ".yaml", ".csv", ".md"}
_SOURCE_DIRS = ("models", "macros", "tests")
_SOURCE_FILES = ("dbt_project.yml", "profiles.yml", "selectors.yml")

# `dbt parse` reads the profile but never connects; these stand in for the
# DBT_SMS_* variables when the process has none (a fresh clone, CI), and the
# manifest does not depend on them.
_PARSE_ONLY_CONNECTION = {
    "DBT_SMS_HOST": "localhost",
    "DBT_SMS_PORT": "5432",
    "DBT_SMS_USER": "parse-only",
    "DBT_SMS_PASSWORD": "",
    "DBT_SMS_DBNAME": "parse-only",
}
assert set(_PARSE_ONLY_CONNECTION) == set(DBT_ENV_NAMES)
PARSE_ONLY_DATABASE = _PARSE_ONLY_CONNECTION["DBT_SMS_DBNAME"]


def manifest_in_database(manifest: Mapping[str, Any], database: str) -> dict[str, Any]:
    """The parse-time manifest with its models and sources in ``database``.

    The manifest is parsed once without a database, so its relations read
    ``"parse-only"."marts"."cost_daily"``; Postgres refuses a reference to
    another database, so reading a built model's columns (dagster-dbt's column
    schema and lineage) needs the relations of the database the run built in.
    Nothing else in the manifest depends on the database.
    """
    old_prefix, new_prefix = f'"{PARSE_ONLY_DATABASE}".', '"{}".'.format(database.replace('"', '""'))

    def relocated(resources: Mapping[str, Any]) -> dict[str, Any]:
        return {
            unique_id: props if props.get("database") != PARSE_ONLY_DATABASE else {
                **props,
                "database": database,
                "relation_name": (new_prefix + props["relation_name"].removeprefix(old_prefix)
                                  if props.get("relation_name") else props.get("relation_name")),
            }
            for unique_id, props in resources.items()
        }

    return {**manifest, "nodes": relocated(manifest["nodes"]), "sources": relocated(manifest["sources"])}


@functools.cache
def dbt_project(home: Path | None = None) -> DbtProject:
    """The project; an installed copy keeps its ``target/`` under ``home`` (``SMS_PIPELINE_HOME``)."""
    return DbtProject(project_dir=DBT_PROJECT_DIR, target_path=_target_path(home))


def _target_path(home: Path | None) -> Path:
    if not package_files.is_packaged():
        return Path("target")  # a checkout: dbt_project/target, as dbt itself would
    # One folder per installed copy: two installs sharing a home never share a manifest.
    copy = hashlib.sha256(str(DBT_PROJECT_DIR).encode()).hexdigest()[:12]
    if home is None:
        return Path(tempfile.gettempdir()) / f"sms-pipeline-{getpass.getuser()}" / f"dbt-target-{copy}"
    return home.resolve() / "dbt" / f"target-{copy}"


def dbt_executable() -> str:
    return package_files.console_script("dbt")


def dbt_cli(project: DbtProject | None = None) -> DbtCliResource:
    """dagster-dbt's resource for the project, running the ``dbt`` installed with the package."""
    return DbtCliResource(project_dir=project or dbt_project(), dbt_executable=dbt_executable())


def _newest_source_mtime(project_dir: Path) -> float:
    files = [project_dir / name for name in _SOURCE_FILES if (project_dir / name).exists()]
    for folder in _SOURCE_DIRS:
        files.extend(p for p in (project_dir / folder).rglob("*") if p.suffix in _SOURCE_SUFFIXES)
    return max(p.stat().st_mtime for p in files)


def manifest_is_current(project: DbtProject) -> bool:
    manifest = project.manifest_path
    return manifest.exists() and manifest.stat().st_mtime >= _newest_source_mtime(project.project_dir)


def prepare_manifest(project: DbtProject | None = None) -> Path:
    """Make sure ``manifest.json`` exists and reflects the project's files; return its path."""
    project = project or dbt_project()
    if manifest_is_current(project):
        return project.manifest_path
    # One parse for all waiting processes; dagster-dbt's own guard gives up
    # after 60 s, which a parse on a busy machine can exceed.
    project.manifest_path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(project.manifest_path.with_suffix(".prepare-lock")), timeout=_PARSE_WAIT_S):
        if not manifest_is_current(project):
            log.info("parsing the dbt project in %s", project.project_dir)
            parse_env = {name: value for name, value in _PARSE_ONLY_CONNECTION.items() if name not in os.environ}
            with dbt_environment(parse_env):
                # What dagster-dbt's preparer runs (the project has no dbt packages
                # to install), with the package's own dbt instead of PATH's. A full
                # parse: partial parsing has kept a singular test's description stale.
                dbt_cli(project).cli(["parse", "--quiet", "--no-partial-parse"],
                                     target_path=project.target_path).wait()
    return project.manifest_path
