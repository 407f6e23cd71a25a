"""``aspen expire``: instances whose TTL passed die in a batch of their own, and the next
``maintain --runtime spark`` removes exactly what depended only on them."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark import StorageLevel

from aspen.cli.main import main
from aspen.lake import apply as apply_module
from aspen.lake.committed import read_committed
from aspen.lake.deltars import read_table
from aspen.lake.expire import expire_due
from aspen.lake.ingest import ingest_files
from aspen.pipeline.maintain_spark import maintain_spark
from aspen.pipeline.verify import verify_lake
from aspen.spark.checkpoint import CHECKPOINT_LEVEL_CONF
from aspen.spark.session import temporary_conf

pytestmark = pytest.mark.spark

T0 = "2026-01-01T00:00:00Z"
RECORDS = [  # a → b → c with TTLs of 60 s and 600 s; a → c for ever; a re-insert renews b → c
    {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0, "ttl_s": 60,
     "event_time": T0},
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0, "ttl_s": 60,
     "event_time": T0},
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0, "ttl_s": 600,
     "event_time": "2026-01-01T00:00:30Z"},
    {"op": "insert", "relation": "link", "src": "a", "dst": "c", "cost": 9.0, "event_time": T0},
]


#: Where a batch checkpoints a frame (each through aspen.spark.checkpoint.checkpointed): the
#: apply's folded changes, the facts, each round, the publish, and expire's due instances.
CHECKPOINT_SITES = {"_apply_pending", "_read_batch", "_round", "_publish_nodes", "expire_due"}


@pytest.fixture
def checkpoints(spark, monkeypatch) -> list[tuple[str, str, StorageLevel | None]]:
    """Every ``localCheckpoint`` call on the session's frames while the test runs (the real call
    still runs): (the function that called it, that function's caller, the level asked for)."""
    calls: list[tuple[str, str, StorageLevel | None]] = []
    frames = type(spark.range(1))  # classic PySpark: a subclass of pyspark.sql.DataFrame
    original = frames.localCheckpoint

    def recorded(self, eager: bool = True, storageLevel: StorageLevel | None = None):
        calls.append((sys._getframe(1).f_code.co_name, sys._getframe(2).f_code.co_name,
                      storageLevel))
        return original(self, eager, storageLevel)

    monkeypatch.setattr(frames, "localCheckpoint", recorded)
    return calls


@pytest.mark.slow
def test_expired_instances_die_and_the_views_follow(spark, lake, tmp_path: Path,
                                                    checkpoints, monkeypatch) -> None:
    """Run at ``spark.aspen.checkpointStorageLevel=DISK_ONLY``, the apply and the sweep on
    their Spark path: the batches (an apply, a build, an expiry, a deletion) give the same
    views, and every checkpoint they take goes through ``checkpointed`` at that level — none
    falls back to Spark's default."""
    monkeypatch.setattr(apply_module, "IN_PROCESS_MAX_UPDATES", -1)
    with temporary_conf(spark, {CHECKPOINT_LEVEL_CONF: "DISK_ONLY"}):
        _expire_and_maintain(spark, lake, tmp_path)
    assert {caller for _via, caller, _level in checkpoints} == CHECKPOINT_SITES
    assert {via for via, _caller, _level in checkpoints} == {"checkpointed"}
    # StorageLevel defines == but no hash (no sets of them): the levels are compared as text
    assert {str(level) for _via, _caller, level in checkpoints} == {str(StorageLevel.DISK_ONLY)}


@pytest.mark.slow
def test_expired_instances_die_in_process_and_the_views_follow(spark, lake, tmp_path: Path,
                                                               checkpoints) -> None:
    """The same batches with the apply and the sweep in process (small: the default), the
    views maintained on Spark: neither takes a Spark checkpoint."""
    _expire_and_maintain(spark, lake, tmp_path)
    assert {caller for _via, caller, _level in checkpoints} == CHECKPOINT_SITES - {
        "_apply_pending", "expire_due"}


def _expire_and_maintain(spark, lake, tmp_path: Path) -> None:
    path = tmp_path / "ttl.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    ingest_files(lake, [path])
    maintain_spark(lake, spark=spark, partitions=2)
    assert {("a", "b"), ("b", "c"), ("a", "c")} <= set(
        map(tuple, read_committed(lake, "reachable")[["src", "dst"]].values))

    early = expire_due(spark, lake, datetime(2026, 1, 1, 0, 0, 59, tzinfo=UTC))
    assert early.expired == 0 and early.batch_id is None
    report = expire_due(spark, lake, datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC))
    assert report.expired == 2 and report.per_relation == {"link": 2}
    registry = read_table(lake, "variables").set_index("var")
    assert sorted(registry[registry["death"] == "expired"].index) == ["v1", "v2"]
    assert set(registry.loc[["v1", "v2"], "deleted_batch"]) == {report.batch_id}
    links = read_table(lake, "link")
    assert sorted(links["var"]) == ["v3", "v4"]  # the renewal of b → c and a → c live on
    assert expire_due(spark, lake, datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)).expired == 0

    result = maintain_spark(lake, spark=spark, partitions=2)
    assert result.deleted_vars == 2
    reachable = set(map(tuple, read_committed(lake, "reachable")[["src", "dst"]].values))
    assert reachable == {("b", "c"), ("a", "c")}  # a → b expired; b → c was renewed
    assert verify_lake(lake).ok


def test_cli_rejects_a_bad_time_in_one_line(capsys) -> None:
    assert main(["expire", "--now", "yesterday"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ISO-8601" in err[0]
