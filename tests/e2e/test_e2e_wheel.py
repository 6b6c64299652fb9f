"""The wheel installs anywhere: built from the repository, installed (not editable) into a new
environment outside the checkout, and run from another folder with no virtualenv on PATH.

Nothing is downloaded: the wheel is built with this environment's setuptools
(``--no-build-isolation``) and installed without its dependencies, which the
new environment reuses from this one through a ``.pth`` file. A real install
also puts the dependencies' commands (``dbt``) beside its interpreter; the
test writes that one from dbt-core's own entry point.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
# Top-level entries a build never needs (and some large ones).
_NOT_COPIED = {".git", ".venv", ".ci", "build", "dist", "tests", "bench", ".sms-pipeline", ".sms-pipeline-test",
               ".pytest_cache", ".hypothesis", ".import_linter_cache"}
_DBT_OUTPUT = {"target", "logs", "dbt_packages"}


def _ignore(folder: str, names: list[str]) -> set[str]:
    here = Path(folder)
    ignored = {n for n in names if n == "__pycache__" or n.endswith(".egg-info")}
    if here == ROOT:
        ignored |= {n for n in names if n in _NOT_COPIED or (here / n / "pyvenv.cfg").exists()}
    if here == ROOT / "dbt_project":
        ignored |= _DBT_OUTPUT & set(names)
    return ignored


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=_ignore)
    # dbt's build output beside the sources must stay out of the wheel.
    for leftover in ("target/manifest.json", "logs/dbt.log"):
        (source / "dbt_project" / leftover).parent.mkdir(parents=True, exist_ok=True)
        (source / "dbt_project" / leftover).write_text("{}", encoding="utf-8")
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                  "--quiet", "--wheel-dir", str(work / "dist"), str(source)], cwd=source, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    [path] = (work / "dist").glob("sms_pipeline-*.whl")
    return path


def _shipped_sources() -> dict[str, Path]:
    """Every file the wheel must carry, by its path under sms_pipeline/_files/."""
    files = {"dagster.yaml.template": ROOT / "dagster.yaml.template"}
    for top in ("sql", "dbt_project"):
        for path in (ROOT / top).rglob("*"):
            rel = path.relative_to(ROOT)
            # Hidden folders (a stray .sms-pipeline home, editor state) are not the project's: never shipped.
            if not path.is_file() or "__pycache__" in rel.parts or any(p.startswith(".") for p in rel.parts):
                continue
            if top == "dbt_project" and rel.parts[1] in _DBT_OUTPUT:
                continue
            files[rel.as_posix()] = path
    return files


def test_the_wheel_carries_the_project_files_and_no_build_output(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        packaged = {name.removeprefix("sms_pipeline/_files/"): name
                    for name in archive.namelist() if name.startswith("sms_pipeline/_files/")}
        expected = _shipped_sources()
        assert set(packaged) == set(expected)
        for rel, original in expected.items():
            assert archive.read(packaged[rel]) == original.read_bytes(), rel
    assert any(rel.startswith("sql/queries/") for rel in packaged)
    assert not any(part in _DBT_OUTPUT for rel in packaged for part in rel.split("/")[1:2])


def _new_environment(base: Path, wheel: Path) -> Path:
    """A virtualenv outside the checkout with the wheel installed; its dependencies are this environment's."""
    env = base / "env"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(env)], timeout=120)
    assert made.returncode == 0, made.stderr
    python = env / "bin" / "python"
    # Installed before the .pth exists, so pip sees an empty environment (and never this one).
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                      "--quiet", str(wheel)], timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     check=True).stdout.strip())
    (site / "_reuse_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    [dbt] = entry_points(group="console_scripts", name="dbt")
    script = env / "bin" / "dbt"
    script.write_text(f"#!{python}\nimport sys\nfrom importlib.metadata import EntryPoint\n"
                      f"sys.exit(EntryPoint('dbt', {dbt.value!r}, 'console_scripts').load()())\n", encoding="utf-8")
    script.chmod(0o755)
    return env


def _clean_environ(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SMS_PIPELINE_", "SMS_PROVIDER_", "DAGSTER_", "DBT_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not (Path(p).parent / "pyvenv.cfg").exists())
    env["SMS_PIPELINE_HOME"] = str(home)
    return env


def _tree(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if "__pycache__" not in p.parts}


def test_the_installed_wheel_migrates_and_runs_the_demo_from_anywhere(wheel: Path, tmp_path: Path):
    env = _new_environment(tmp_path, wheel)
    command = str(env / "bin" / "sms-pipeline")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environ = _clean_environ(tmp_path / "home")

    where = _run([str(env / "bin" / "python"), "-c",
                  "import sms_pipeline, sms_pipeline.package_files as f; print(sms_pipeline.__file__, f.is_packaged())"],
                 cwd=elsewhere, env=environ, timeout=120)
    assert where.returncode == 0, where.stderr
    location, packaged = where.stdout.split()
    assert Path(location).is_relative_to(env) and packaged == "True", where.stdout
    installed_files = Path(location).parent / "_files"
    before = _tree(installed_files)

    try:
        upgrade = _run([command, "db", "upgrade"], cwd=elsewhere, env=environ, timeout=300)
        assert upgrade.returncode == 0, upgrade.stdout + upgrade.stderr
        assert "applied V1 schemas" in upgrade.stdout, upgrade.stdout

        summary = tmp_path / "summary.json"
        demo = _run([command, "demo", "--days", "1", "--messages-per-day", "150", "--summary-json", str(summary)],
                    cwd=elsewhere, env=environ, timeout=900)
        assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
        assert "sms-pipeline demo: per provider-local day" in demo.stdout
        assert re.search(r"^\s*\d{4}-\d{2}-\d{2}\s+\d+", demo.stdout, re.M), demo.stdout[-3000:]
        figures = json.loads(summary.read_text(encoding="utf-8"))
        assert len(figures["days"]) == 1 and figures["days"][0]["sent"] > 0
        # dbt wrote its manifest and logs under SMS_PIPELINE_HOME, nothing beside the installed project.
        assert _tree(installed_files) == before
        assert list((tmp_path / "home" / "dbt").glob("target-*/manifest.json"))

        # An install whose migrations went missing says so instead of "up to date".
        away = tmp_path / "migrations-away"
        away.mkdir()
        migrations = sorted((installed_files / "sql").glob("V*.sql"))
        for path in migrations:
            path.rename(away / path.name)
        try:
            empty = _run([command, "db", "upgrade"], cwd=elsewhere, env=environ, timeout=300)
        finally:
            for path in migrations:
                (away / path.name).rename(path)
        assert empty.returncode == 2 and "no migrations" in empty.stderr, empty.stdout + empty.stderr
    finally:
        _run([command, "db", "stop"], cwd=elsewhere, env=environ, timeout=120)
