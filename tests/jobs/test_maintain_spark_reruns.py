"""``maintain --runtime spark`` reruns a crashed batch to the exact result: crashes injected at
several points of one application, and a real ``spark-submit`` job killed mid-batch, then rerun
on a master that retries tasks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable
from spark_lake_workload import assert_views_exact, ingest, workload

from aspen.errors import InjectedCrash
from aspen.lake.deltars import read_table
from aspen.pipeline import ledger
from aspen.pipeline.maintain_spark import NODE_STATE, maintain_spark
from aspen.settings import Settings

pytestmark = pytest.mark.spark

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


CRASH_POINTS = [
    "maintain:after-round-1",
    "maintain:after-view-changes",
    "maintain:before-ledger",
]


@pytest.mark.slow
def test_a_batch_crashed_anywhere_reruns_to_the_exact_result(spark, lake: Settings,
                                                             tmp_path: Path, monkeypatch) -> None:
    batches = workload(seed=7, batches=2)
    ingest(spark, lake, tmp_path / "1.jsonl", batches[0])
    maintain_spark(lake, spark=spark, partitions=3)
    ingest(spark, lake, tmp_path / "2.jsonl", batches[1])
    for point in CRASH_POINTS:  # the same batch crashes at one point after another
        monkeypatch.setenv("ASPEN_CRASH_AT", point)
        with pytest.raises(InjectedCrash):
            maintain_spark(lake, spark=spark, partitions=3, hosts=2)
        assert ledger.last_committed(lake).batch_id == 1, point  # not committed
    monkeypatch.delenv("ASPEN_CRASH_AT")
    assert maintain_spark(lake, spark=spark, partitions=3, hosts=2).batch_id == 2
    assert_views_exact(lake)


@pytest.mark.slow
def test_a_spark_submit_job_killed_mid_batch_reruns_to_the_exact_result_with_retried_tasks(
        spark, lake: Settings, tmp_path: Path) -> None:
    """The real thing: ``spark-submit jobs/maintain.py`` dies (``os._exit``, as under kill -9)
    after writing node states but before the views and the ledger; the rerun, a second
    ``spark-submit`` on a master that retries tasks, with every publish task failing once,
    restores and ends equal to the oracle."""
    batches = workload(seed=11, batches=2)
    ingest(spark, lake, tmp_path / "1.jsonl", batches[0])
    maintain_spark(lake, spark=spark, partitions=2)
    ingest(spark, lake, tmp_path / "2.jsonl", batches[1])
    state_version = DeltaTable(lake.table_uri(NODE_STATE)).version()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", PYSPARK_PYTHON=sys.executable,
               ASPEN_CRASH_AT="maintain:after-state", ASPEN_CRASH_MODE="exit")
    env.pop("SPARK_MASTER", None)
    result = subprocess.run(
        [str(VENV_BIN / "spark-submit"), "--master", "local[2]",
         str(REPO_ROOT / "jobs" / "maintain.py"), "--lake", lake.lake, "--runtime", "spark",
         "--partitions", "2"],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert result.returncode != 0, result.stdout[-2000:]
    assert ledger.last_committed(lake).batch_id == 1
    assert DeltaTable(lake.table_uri(NODE_STATE)).version() > state_version  # it did write

    # the rerun, where the publish's tasks fail once after their host process published the
    # nodes (a master that retries tasks): each retry brings the old journals and meets the
    # nodes its first attempt advanced, still held by the host process (the rounds' retries,
    # with the mail in another order, are tested in process: test_rounds_match_local.py)
    env.update(ASPEN_CRASH_AT="task:after-publish")
    env.pop("ASPEN_CRASH_MODE")
    result = subprocess.run(
        [str(VENV_BIN / "spark-submit"), "--master", "local[2,2]",
         str(REPO_ROOT / "jobs" / "maintain.py"), "--lake", lake.lake, "--runtime", "spark",
         "--partitions", "2"],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert ledger.last_committed(lake).batch_id == 2
    assert_views_exact(lake)
    metrics = read_table(lake, "metrics")
    restores = metrics[(metrics["batch_id"] == 2) & (metrics["metric"] == "publish_restores")]
    assert restores["value"].sum() > 0, restores  # the publishes were retried (none otherwise)
