"""Shared fixtures: ONE session-scoped SparkSession (Delta, local jars) and a fresh lake per test.

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

#: stack-notes §5: small, deterministic, quiet, one JVM for the whole run.
TEST_SPARK_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.rdd.compress": "false",
    "spark.shuffle.compress": "false",
    "spark.dynamicAllocation.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "1",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The one SparkSession of the test run (master ``local[2]`` unless SPARK_MASTER says else)."""
    from aspen.spark.session import get_spark

    session = get_spark("aspen-tests", extra_conf=TEST_SPARK_CONF)
    yield session
    session.stop()
    # py4j logs "closing connection" from __del__ after pytest closed its streams: silence it
    logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture
def lake(tmp_path: Path) -> Settings:
    """Settings for a fresh, empty lake under this test's tmp_path."""
    return Settings(lake=str(tmp_path / "lake"))
