"""``maintain --runtime spark`` on a damaged lake: a node state data file lost and a view table
folder removed are refused before the batch writes; ``--rebuild`` rebuilds the views and the node
states from the registry on Spark; the next batch runs incrementally again. (The local runtime's
damages, every kind: tests/unit/pipeline/test_damaged_lake.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aspen.lake.ingest import ingest_files
from aspen.lake.table_files import data_files
from aspen.pipeline import ledger
from aspen.pipeline.integrity import DamagedLakeError, find_damage
from aspen.pipeline.maintain_spark import NODE_STATE, maintain_spark
from aspen.pipeline.verify import verify_lake
from aspen.settings import Settings

pytestmark = pytest.mark.spark

LINKS = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]


def _ingest(lake: Settings, path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest_files(lake, [path])


def test_spark_refuses_a_damaged_lake_and_rebuilds_it(spark, lake: Settings,
                                                       tmp_path: Path) -> None:
    _ingest(lake, tmp_path / "first.jsonl", [
        {"op": "insert", "relation": "link", "src": s, "dst": d, "cost": 1.0} for s, d in LINKS])
    assert maintain_spark(lake, spark=spark, partitions=2).batch_id == 1
    _ingest(lake, tmp_path / "cut.jsonl",
            [{"op": "delete", "relation": "link", "src": "b", "dst": "c"}])

    files = data_files(lake, NODE_STATE)
    (Path(lake.lake) / NODE_STATE / files[0][0]).unlink()
    shutil.rmtree(Path(lake.lake) / "min_hops")
    with pytest.raises(DamagedLakeError, match=r"'min_hops' is missing.*'node_state' has data "
                                               r"file .* missing.*aspen maintain --rebuild"):
        maintain_spark(lake, spark=spark, partitions=2)
    assert ledger.last_committed(lake).batch_id == 1

    report = maintain_spark(lake, spark=spark, partitions=2, rebuild=True)
    assert report.batch_id == 2 and report.compacted and report.deleted_vars == 0
    assert find_damage(lake) == [] and verify_lake(lake).ok

    _ingest(lake, tmp_path / "back.jsonl",
            [{"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0}])
    report = maintain_spark(lake, spark=spark, partitions=2)
    assert report.batch_id == 3 and not report.compacted and report.inserted_vars == 1
    assert verify_lake(lake).ok
