"""The Spark recompute baselines of the Spark runtime benchmark: the DataFrame closure on tiny
literal graphs, and the lake recompute (apply, read ``link`` from Delta, write the closure to Delta)
against networkx after an insert batch and a delete batch, both applied by it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aspen.bench.peers import networkx_reachable, spark_df_closure
from aspen.bench.spark_runtime import RECOMPUTED, recompute_from_lake
from aspen.generators.records import link_delete, link_insert
from aspen.lake.apply import last_applied_batch
from aspen.lake.deltars import read_table
from aspen.lake.ingest import ingest_files
from aspen.settings import Settings

pytestmark = pytest.mark.spark


def _closure(spark: object, links: list[tuple[str, str]]) -> set[tuple[str, str]]:
    frame = spark.createDataFrame(links, "src string, dst string")  # type: ignore[attr-defined]
    return {(r.src, r.dst) for r in spark_df_closure(frame).collect()}


def test_closure_of_a_cycle_with_a_tail_and_a_duplicate(spark: object) -> None:
    assert _closure(spark, [("a", "b"), ("b", "a"), ("b", "c"), ("a", "b")]) == {
        ("a", "b"), ("b", "a"), ("a", "a"), ("b", "b"), ("b", "c"), ("a", "c")}


def _ingest(spark: object, lake: Settings, tmp_path: Path, name: str,
            records: list[dict[str, object]]) -> None:
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest_files(lake, [path])


@pytest.mark.slow
def test_lake_recompute_applies_the_updates_and_writes_the_closure(
        spark: object, lake: Settings, tmp_path: Path) -> None:
    links = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("e", "f")]
    _ingest(spark, lake, tmp_path, "build", [link_insert(s, d, 1.0) for s, d in links])
    _ingest(spark, lake, tmp_path, "cut", [link_delete("c", "a")])
    rows = recompute_from_lake(spark, lake)
    assert last_applied_batch(spark, lake) == 2  # it applied both ingested batches
    live = [link for link in links if link != ("c", "a")]
    frame = read_table(lake, RECOMPUTED)
    assert set(zip(frame["src"], frame["dst"], strict=True)) == networkx_reachable(live)
    assert rows == len(networkx_reachable(live)) == len(frame)
