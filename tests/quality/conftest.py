"""A maintained lake for the quality tests, and a way to corrupt a copy of it.

The lake is built once per module (one ingest batch that also deletes a link and a trigger, one
maintained batch, on the shared Spark session); each corruption test works on its own copy.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from aspen.settings import Settings

# a → b → c → a plus a → c (cost ties with a → b → c); sensors 10 m apart, region r1 at s1
FIRST = [
    {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "c", "dst": "a", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "a", "dst": "c", "cost": 2.0},
    {"op": "insert", "relation": "link", "src": "c", "dst": "d", "cost": 0.5, "ttl_s": 3600},
    {"op": "insert", "relation": "sensor", "id": "s1", "x": 0.0, "y": 0.0},
    {"op": "insert", "relation": "sensor", "id": "s2", "x": 10.0, "y": 0.0},
    {"op": "insert", "relation": "sensor", "id": "s3", "x": 20.0, "y": 0.0},
    {"op": "insert", "relation": "sensor", "id": "s9", "x": 90.0, "y": 0.0},
    {"op": "insert", "relation": "region_seed", "region": "r1", "id": "s1"},
    {"op": "insert", "relation": "region_seed", "region": "r2", "id": "s9"},
    {"op": "insert", "relation": "triggered", "id": "s1"},
    {"op": "insert", "relation": "triggered", "id": "s2"},
    {"op": "insert", "relation": "triggered", "id": "s3"},
    {"op": "insert", "relation": "triggered", "id": "s9"},
]
THEN = [  # later lines of the same file: v2 = link(b→c) and v14 = triggered(s3) die
    {"op": "delete", "relation": "link", "src": "b", "dst": "c"},
    {"op": "delete", "relation": "triggered", "id": "s3"},
    {"op": "insert", "relation": "link", "src": "b", "dst": "d", "cost": 3.0},
]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def maintained_lake(spark, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A lake with one committed batch (read-only: tests corrupt copies of it)."""
    from aspen.lake.ingest import ingest_files
    from aspen.pipeline.maintain_local import maintain_local

    root = tmp_path_factory.mktemp("quality")
    settings = Settings(lake=str(root / "lake"))
    ingest_files(settings, [_write(root / "updates.jsonl", FIRST + THEN)])
    report = maintain_local(settings, spark=spark, partitions=2, mode="lazy")
    from aspen.lake.deltars import read_table

    assert report.batch_id == 1
    registry = read_table(settings, "variables")
    assert set(registry.loc[registry["deleted_batch"].notna(), "var"]) == {"v2", "v14"}
    return settings


@pytest.fixture
def lake_copy(maintained_lake: Settings, tmp_path: Path) -> Callable[[], Settings]:
    """``lake_copy()``: a private copy of the maintained lake to corrupt."""

    def make() -> Settings:
        source = Path(maintained_lake.local_table_path("x")).parent  # the lake root
        target = tmp_path / "lake"
        shutil.copytree(source, target)
        return Settings(lake=str(target))

    return make
