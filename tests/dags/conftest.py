"""Airflow test environment: a throw-away AIRFLOW_HOME with a migrated SQLite DB, DAGS_FOLDER=dags.

Airflow reads its configuration when first imported, so the environment is set when this
conftest is imported (before any test module imports airflow); the DB is migrated once per
session, in a subprocess, only when a test asks for it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGS_FOLDER = REPO_ROOT / "dags"

if "airflow" not in sys.modules:
    _home = Path(tempfile.mkdtemp(prefix="aspen-airflow-"))
    atexit.register(shutil.rmtree, _home, True)
    os.environ["AIRFLOW_HOME"] = str(_home)
    os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_home / 'airflow.db'}"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(DAGS_FOLDER)
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """Migrate the metadata DB of the test AIRFLOW_HOME once; return AIRFLOW_HOME."""
    airflow = Path(sys.executable).parent / "airflow"
    result = subprocess.run(
        [str(airflow), "db", "migrate"], env=dict(os.environ), capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return Path(os.environ["AIRFLOW_HOME"])


@pytest.fixture(scope="session")
def dagbag():
    """The DagBag of ``dags/`` (parsing needs no DB)."""
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS_FOLDER))
