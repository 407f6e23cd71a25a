"""The engine benchmark against Differential Dataflow and DuckDB (aspen.bench.engine_peers):
a tiny run without cargo (reference and DuckDB, each in its own process), the workloads (every
update changes ``reachable``), the checksum both programs share, the workload file and the
equality check. The Differential Dataflow program itself is exercised by the benchmark only
(building it takes minutes). No timed assertion."""

from __future__ import annotations

import sys
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.baselines.oracles import Scratch, base_state
from aspen.baselines.oracles import min_cost as min_cost_oracle
from aspen.bench.common import FactStream, topology
from aspen.bench.dataflow_peer import (
    fnv1a64,
    min_cost_checksum,
    reachable_checksum,
    run_lines,
    write_workload,
)
from aspen.bench.engine_peers import _check, duckdb_min_cost, markdown, run
from aspen.bench.engine_workloads import bridge_updates, random_updates, workload
from aspen.bench.peers import networkx_reachable
from aspen.errors import ConfigError
from aspen.generators.records import link_insert


@pytest.fixture(scope="module")
def report() -> dict:
    return run(nodes=(12,), updates=2, workloads=("bridge", "random"),
               views=("reachable", "min_cost"), schemes=("reference", "duckdb"), tiny=True,
               budget_s=300, log=None)


@pytest.mark.slow
def test_tiny_run_has_every_case_and_agrees(report: dict) -> None:
    assert report["all_equal"] is True
    cases = {(c["workload"], c["view"]) for c in report["cases"]}
    assert cases == {(w, v) for w in ("bridge", "random") for v in ("reachable", "min_cost")}
    for case in report["cases"]:
        assert case["node_count"] == 22 and case["updates"] == 2
        assert case["checked_against"] == "reference" and case["mismatches"] == []
        by_scheme = {s["scheme"]: s for s in case["schemes"]}
        assert list(by_scheme) == ["reference", "duckdb"]
        for scheme in by_scheme.values():
            assert scheme["status"] == "ok", scheme["note"]
            assert scheme["updates_done"] == 2 and len(scheme["batches"]) == 3
            assert scheme["build_s"] > 0 and scheme["peak_rss_mb"] > 0
            assert scheme["update_median_s"] <= scheme["update_p90_s"] <= scheme["update_max_s"]
        assert by_scheme["reference"]["index_s"] is not None  # Aspen indexes after the build
        assert by_scheme["duckdb"]["all_equal"] is True
        assert by_scheme["duckdb"]["checked_batches"] == 3
        rows = [b["rows"] for b in by_scheme["duckdb"]["batches"]]
        assert rows[0] != rows[1]  # the first update (a deletion) changed the view
    table = markdown(report)
    assert table.count("| reference |") == 4 and "EQUALITY FAILURES" not in table


def _live_links(batches: list[list[dict]]) -> list[list[tuple[str, str]]]:
    """The live links after every batch, as FactStream (Aspen's ingest in the bench) sees them."""
    stream = FactStream()
    out = []
    for records in batches:
        stream.batch(records)
        out.append(stream.links())
    return out


def _assert_each_update_changes_reachable(batches: list[list[dict]]) -> None:
    closures = [networkx_reachable(links) for links in _live_links(batches)]
    for before, after in zip(closures, closures[1:], strict=False):
        assert before != after


def test_bridge_updates_each_change_reachable() -> None:
    topo = topology(tiny=True)
    batches = bridge_updates(topo, 6, seed=1)
    assert len(batches) == 7 and len(batches[0]) == len(topo.links)
    _assert_each_update_changes_reachable(batches)
    graph = nx.Graph([(a, b) for a, b, _ in topo.undirected()])
    bridges = {frozenset(e) for e in nx.bridges(graph)}
    for records in batches[1:]:
        assert {frozenset((r["src"], r["dst"])) for r in records} <= bridges
        assert len({r["op"] for r in records}) == 1 and len(records) == 2


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), updates=st.integers(1, 8))
def test_random_updates_each_change_reachable(seed: int, updates: int) -> None:
    batches = random_updates(topology(tiny=True), updates, seed=seed)
    assert len(batches) == updates + 1 and all(len(b) == 1 for b in batches[1:])
    assert batches[1][0]["op"] == "delete"
    _assert_each_update_changes_reachable(batches)
    assert random_updates(topology(tiny=True), updates, seed=seed) == batches  # by seed


def test_unknown_workload_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown workload"):
        workload("chain", topology(tiny=True), 2)


_ids = st.sampled_from(["a", "b", "c", "n1", "n12", "s0.1.2", "é"])


@settings(max_examples=50, deadline=None)
@given(pairs=st.sets(st.tuples(_ids, _ids), max_size=30))
def test_checksum_is_the_wrapping_sum_of_fnv_and_order_free(pairs: set) -> None:
    expected = sum(fnv1a64(f"{s}\t{d}") for s, d in pairs) % 2**64
    assert reachable_checksum(pairs) == expected
    assert reachable_checksum(sorted(pairs, reverse=True)) == expected


@settings(max_examples=50, deadline=None)
@given(rows=st.dictionaries(st.tuples(_ids, _ids), st.integers(0, 10**6), max_size=30))
def test_min_cost_checksum_scales_float_costs(rows: dict) -> None:
    as_floats = [(s, d, c / 1000) for (s, d), c in rows.items()]
    expected = sum(fnv1a64(f"{s}\t{d}\t{c}") for (s, d), c in rows.items()) % 2**64
    assert min_cost_checksum(as_floats) == expected
    assert min_cost_checksum([(s, d, c) for (s, d), c in rows.items()]) == expected


def test_duckdb_min_cost_equals_the_oracle() -> None:
    topo = topology(tiny=True)
    links = [(lk.src, lk.dst, lk.cost) for lk in topo.links][:-6]  # not symmetric any more
    expected = {(s, d, round(c * 1000)) for s, d, c in
                min_cost_oracle(Scratch(base_state({"link": links})), {})}
    assert duckdb_min_cost([(s, d, round(c * 1000)) for s, d, c in links]) == expected


def test_workload_file_refuses_ids_with_white_space(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="white space"):
        write_workload([[link_insert("a b", "c", 1.0)]], tmp_path / "w.txt")


def test_a_mismatch_is_reported_and_breaks_equality() -> None:
    truth = {"scheme": "dataflow", "batches": [{"batch": 0, "rows": 4, "checksum": 7},
                                              {"batch": 1, "rows": 2, "checksum": 5}]}
    good = {"scheme": "duckdb", "batches": [{"batch": 0, "rows": 4, "checksum": 7},
                                            {"batch": 1, "rows": 2, "checksum": 5}]}
    bad = {"scheme": "reference", "batches": [{"batch": 0, "rows": 4, "checksum": 7},
                                              {"batch": 1, "rows": 2, "checksum": 6}]}
    name, mismatches = _check([bad, good, truth], log=None)
    assert name == "dataflow"  # Differential Dataflow is the truth whenever it ran
    assert bad["all_equal"] is False and good["all_equal"] is True and truth["all_equal"] is None
    assert len(mismatches) == 1 and "reference differs from dataflow after batch 1" in mismatches[0]


def test_a_build_over_budget_does_not_finish(tmp_path: Path) -> None:
    slow = [sys.executable, "-c", "import time; time.sleep(30)"]
    done = run_lines(slow, tmp_path / "o.jsonl", budget_s=0.5)
    assert done["status"] == "did not finish" and done["lines"] == []
    assert done["note"] == "build stopped after 0.5 s"


def test_updates_get_a_budget_of_their_own_after_the_build(tmp_path: Path) -> None:
    # the build (batch 0) takes longer than the budget would allow from the start; the
    # updates then run out of their own budget
    script = ("import json, time; time.sleep(0.8); print(json.dumps({'batch': 0}), flush=True);"
              "time.sleep(0.2); print(json.dumps({'batch': 1}), flush=True); time.sleep(30)")
    done = run_lines([sys.executable, "-c", script], tmp_path / "o.jsonl", budget_s=1.5)
    assert done["status"] == "did not finish"
    assert done["note"].startswith("updates stopped")
    assert [line["batch"] for line in done["lines"]] == [0, 1]
