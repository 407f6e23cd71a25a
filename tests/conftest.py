"""Shared fixtures: ONE session-scoped SparkSession per pytest process (Delta, local jars; ``make
test`` runs two worker processes, pytest-xdist) and a fresh lake per test.

The session starts lazily (≈10 s) the first time a test asks for ``spark``; tests that do not
use Spark never pay for it. Spark tests are marked ``@pytest.mark.spark``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from aspen.settings import Settings

os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")


@pytest.fixture(scope="session", autouse=True)
def _tiny_data_spark_defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The ``spark-submit`` jobs the tests start (Airflow tasks, killed jobs) run with
    :data:`~aspen.spark.session.SHORT_JOB_CONF` (the tiny-data conf, a C1-only JVM), from a
    ``spark-defaults.conf`` in ``$SPARK_CONF_DIR`` as a deployment would give it (unless the
    environment names a conf folder of its own). The test process's own session sets its JVM
    options itself (:data:`~aspen.spark.session.TEST_CONF`: long-lived, so C2 as well)."""
    if os.environ.get("SPARK_CONF_DIR"):
        yield
        return
    from aspen.spark.session import SHORT_JOB_CONF

    folder = tmp_path_factory.mktemp("spark-conf")
    (folder / "spark-defaults.conf").write_text(
        "".join(f"{key} {value}\n" for key, value in SHORT_JOB_CONF.items()))
    os.environ["SPARK_CONF_DIR"] = str(folder)
    yield
    os.environ.pop("SPARK_CONF_DIR", None)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The one SparkSession of this pytest process (master ``local[2]`` unless SPARK_MASTER says
    else)."""
    from aspen.spark.session import TEST_CONF, get_spark

    # small, deterministic, quiet; one JVM for the process's whole run (a session start takes
    # seconds, so the suite is one JVM and many small tests)
    session = get_spark("aspen-tests", extra_conf=TEST_CONF)
    yield session
    session.stop()
    # py4j logs "closing connection" from __del__ after pytest closed its streams: silence it
    logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture
def lake(tmp_path: Path) -> Settings:
    """Settings for a fresh, empty lake under this test's tmp_path."""
    return Settings(lake=str(tmp_path / "lake"))
