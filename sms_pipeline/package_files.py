"""Where the installed package finds its non-Python files and the commands it runs.

``sql/``, ``dbt_project/`` and ``dagster.yaml.template`` live at the top of
the repository. ``setup.py`` copies them into the wheel under
``sms_pipeline/_files/``; an editable install (or a checkout on ``sys.path``)
has no such copy and reads them where they are, beside the package. Either
way they are found through ``importlib.resources`` from the imported package,
never through the working directory.

A missing folder is not an error here: the reader says what it missed
(e.g. ``db upgrade`` refuses to run with no migrations).
"""

from __future__ import annotations

import functools
import shutil
import sys
from importlib.resources import files
from pathlib import Path

from sms_pipeline.errors import UserError

# Inside the package; setup.py writes the wheel's copy there.
PACKAGED_DIR = "_files"


@functools.cache
def _root() -> tuple[Path, bool]:
    package = Path(str(files("sms_pipeline")))
    packaged = package / PACKAGED_DIR
    if packaged.is_dir():
        return packaged, True
    return package.parent, False


def is_packaged() -> bool:
    """True for the wheel's copy, which nothing may write beside (it can be read-only)."""
    return _root()[1]


def sql_dir() -> Path:
    """The migrations (``V<n>__<what>.sql``)."""
    return _root()[0] / "sql"


def queries_dir() -> Path:
    """The named queries (``<name>.sql``)."""
    return sql_dir() / "queries"


def dbt_project_dir() -> Path:
    """The dbt project's sources (no ``target/`` in an installed copy)."""
    return _root()[0] / "dbt_project"


def dagster_template() -> Path:
    """``dagster.yaml.template``, rendered into ``DAGSTER_HOME``."""
    return _root()[0] / "dagster.yaml.template"


def console_script(name: str) -> str:
    """The path of a command installed with the package's dependencies (e.g. ``dbt``).

    The one beside the running interpreter comes first: it belongs to the
    environment whose libraries this process imports (an un-activated
    virtualenv is not on PATH, and another ``dbt`` on PATH may be another
    version). PATH is the fallback.
    """
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        raise UserError(f"the {name!r} command is neither beside {sys.executable} nor on PATH; "
                        f"install sms-pipeline with its dependencies into this environment")
    return found
