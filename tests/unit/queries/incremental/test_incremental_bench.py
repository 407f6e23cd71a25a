"""The benchmark's own check: on a small topology every one-change batch's maintained result
equals DuckDB's recomputation, and the state's size is reported per batch."""

from __future__ import annotations

from aspen.bench.incremental_queries import QUERIES, incremental_queries


def test_the_benchmark_finds_no_mismatch_on_a_small_topology() -> None:
    result = incremental_queries(nodes=30, batches=6, seed=3)
    assert result["mismatches"] == 0
    assert set(result["queries"]) == set(QUERIES)
    for query in result["queries"].values():
        assert len(query["state_rows"]) == 6 and min(query["state_rows"]) > 0
