"""The provenance-size benchmark runs on a tiny lake maintained in process (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aspen.bench.provenance_size import provenance_size, table_lines, view_sizes
from aspen.lake.ingest import ingest_files
from aspen.pipeline.maintain_local import maintain_local
from aspen.settings import Settings

# a → b → c → a plus a shortcut; three sensors in a row, region r1 seeded at s1
RECORDS = [
    {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "c", "dst": "a", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "a", "dst": "c", "cost": 5.0},
    {"op": "insert", "relation": "sensor", "id": "s1", "x": 0.0, "y": 0.0},
    {"op": "insert", "relation": "sensor", "id": "s2", "x": 10.0, "y": 0.0},
    {"op": "insert", "relation": "sensor", "id": "s3", "x": 20.0, "y": 0.0},
    {"op": "insert", "relation": "region_seed", "region": "r1", "id": "s1"},
    {"op": "insert", "relation": "triggered", "id": "s1"},
    {"op": "insert", "relation": "triggered", "id": "s2"},
    {"op": "insert", "relation": "triggered", "id": "s3"},
]


def _lake(root: Path, records: list[dict]) -> Settings:
    lake = Settings(lake=str(root / "lake"))
    path = root / "updates.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest_files(lake, [path])
    maintain_local(lake)
    return lake


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return _lake(tmp_path_factory.mktemp("tiny"), RECORDS)


def test_every_measure_on_a_tiny_lake(tiny: Settings) -> None:
    result = provenance_size(tiny.lake)
    assert result["lake"] == {"nodes": 3, "links": 4, "sensors": 3, "regions": 1, "batches": 1}
    views = result["views"]
    assert "region_sizes" not in views  # its rows carry no formula
    # a, b, c all reach each other (9 pairs); s1, s2, s3 are all in r1
    assert views["reachable"]["rows"] == 9 and views["active_region"]["rows"] == 3
    for sizes in views.values():
        assert sizes["bytes_max"] <= sizes["bytes_total"]
        assert sizes["nodes_stored_max"] <= sizes["nodes_stored_sum"]
    # region r1 holds s3 only through s2, so deleting the seed loses the whole region
    assert result["what_if"]["seed"]["lost"]["active_region"] == 3
    assert result["what_if"]["link"]["instances"] == 1
    assert result["explain"]["reachable"]["witnesses"] >= 1
    assert result["explain"]["active_region"]["critical"] >= 1
    assert any(line.startswith("reachable") for line in table_lines(result))


def test_a_lake_without_sensors(tmp_path: Path) -> None:
    lake = _lake(tmp_path, [r for r in RECORDS if r["relation"] == "link"])
    result = provenance_size(lake.lake, sift=False)
    assert result["lake"]["sensors"] == 0 and "seed" not in result["what_if"]
    assert "nodes_sifted_sum" not in result["views"]["reachable"]
    assert view_sizes(lake, "region_sizes") is None
