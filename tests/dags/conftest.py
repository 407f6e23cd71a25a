"""Airflow test environment: a throw-away AIRFLOW_HOME with a migrated SQLite DB, DAGS_FOLDER=dags,
and the pipeline's ``follower`` Param off by default.

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
# The pipeline DAG's runs keep no follower unless a test asks (run_conf {"follower": True}): the
# DAG tests exercise the one-shot path, and parse the DAG with this default.
os.environ["ASPEN_FOLLOWER"] = "0"


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


@pytest.fixture
def fresh_pipeline_assets(airflow_db: Path) -> None:
    """Forget which ``aspen.*`` assets are active before a ``dag.test()`` of the pipeline.

    Its assets' URIs name the lake of the test that parsed the DAG; Airflow leaves an asset whose
    name is active under another URI inactive (the scheduler's orphan sweep, which ``dag.test()``
    does not run, would clear the old one) and fails the tasks that declare it. So a second
    pipeline run over another lake in one session needs this.
    """
    from airflow.models.asset import AssetActive
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    with create_session() as session:
        session.execute(delete(AssetActive).where(AssetActive.name.like("aspen.%")))
