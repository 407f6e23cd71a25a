"""The bench suite's reduced quick mode (``aspen bench --tiny``): files written, numbers sane,
and every peer's view equal to Aspen's. No SparkSession is started (Spark peers are skipped in
this mode); no timed assertion."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from aspen.cli.main import main


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bench")
    assert main(["bench", "--tiny", "--out", str(out)]) == 0
    return out, json.loads((out / "results.json").read_text())


@pytest.mark.slow
def test_files_are_written(results: tuple[Path, dict]) -> None:
    out, data = results
    for name in ("results.json", "measurements.csv", "targets.csv", "summary.md"):
        assert (out / name).stat().st_size > 0, name
    with open(out / "measurements.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {"insertions/dred", "deletions/absorption-lazy", "peers"} <= {r["experiment"]
                                                                         for r in rows}
    summary = (out / "summary.md").read_text()
    assert "## Targets" in summary and data["machine"]["cpu"] in summary
    assert "Spark peers skipped" in summary
    assert len(data["targets"]) == 7


def test_every_experiment_finished(results: tuple[Path, dict]) -> None:
    _out, data = results
    for group, rec in data["experiments"].items():
        cases = [rec] if "status" in rec else list(rec.values())
        assert all(c["status"] == "ok" for c in cases), (group, [c.get("note") for c in cases])


def test_absorption_ships_fewer_messages_per_deletion_than_dred(results: tuple[Path, dict]) -> None:
    _out, data = results
    dels = {s: r["result"]["schemes"][s] for s, r in data["experiments"]["deletions"].items()}
    assert dels["dred"]["deletions"] == dels["absorption-lazy"]["deletions"] == 20
    for scheme in ("absorption-lazy", "absorption-eager"):
        assert dels[scheme]["mean_messages"] < dels["dred"]["mean_messages"]
        assert dels[scheme]["view_digest"] == dels["dred"]["view_digest"]


def test_peers_agree_with_aspen(results: tuple[Path, dict]) -> None:
    _out, data = results
    res = data["experiments"]["peers"]["result"]
    assert set(res["peers"]) == {"aspen", "networkx", "duckdb"}  # no Spark in this mode
    for peer in ("networkx", "duckdb"):
        assert res["peers"][peer]["all_equal"]
        assert res["peers"][peer]["checked_batches"] == len(res["batches"]) == 7
    assert all(b["view_tuples"] > 0 for b in res["batches"])
    assert any(b["view_changed"] for b in res["batches"][1:])  # the check saw a changed view


def test_insertions_and_orders_are_consistent(results: tuple[Path, dict]) -> None:
    _out, data = results
    ins = data["experiments"]["insertions"]
    final = {s: r["result"]["schemes"][s]["steps"][-1] for s, r in ins.items()}
    assert len({f["view_tuples"] for f in final.values()}) == 1  # every scheme, same view size
    steps = final and ins["dred"]["result"]["schemes"]["dred"]["steps"]
    assert [s["fraction"] for s in steps] == [0.25, 0.5, 0.75, 1.0]
    assert all(a["messages"] <= b["messages"] for a, b in zip(steps, steps[1:], strict=False))
    orders = data["experiments"]["order"]["result"]["orders"]
    assert len({o["view_tuples"] for o in orders.values()}) == 1
    assert all(o["bdd_nodes"] > 0 for o in orders.values())
    multi = data["experiments"]["aggsel"]["dense/multi"]["result"]
    single = data["experiments"]["aggsel"]["dense/single"]["result"]
    assert multi["view_tuples"]["cheapest_path"] == single["view_tuples"]["cheapest_path"]


def test_paper_experiments_are_repeated_with_confidence_intervals(
        results: tuple[Path, dict]) -> None:
    out, data = results
    rep = data["experiments"]["deletions"]["dred"]["repeats"]
    assert rep["n"] == rep["asked"] == 2
    build = rep["timings"]["schemes/dred/build_s"]
    assert build["min"] <= build["mean"] <= build["max"] and build["ci95"] >= 0
    assert "peers" not in {g for g in data["experiments"] if "repeats" in data["experiments"][g]}
    assert "## Repeats" in (out / "summary.md").read_text()


def test_peak_memory_is_recorded(results: tuple[Path, dict]) -> None:
    _out, data = results
    peers = data["experiments"]["peers"]
    assert peers["peak_rss_mb"] > 10  # an interpreter with networkx and DuckDB loaded


def test_insertions_report_the_papers_per_node_metrics(results: tuple[Path, dict]) -> None:
    _out, data = results
    for scheme in ("absorption-lazy", "dred"):
        last = data["experiments"]["insertions"][scheme]["result"]["schemes"][scheme]["steps"][-1]
        assert 0 < last["messages_per_node_mean"] <= last["messages_per_node_max"] <= \
            last["messages"]
        assert 0 < last["state_entries_per_node_mean"] <= last["state_entries_per_node_max"]
    lazy = data["experiments"]["insertions"]["absorption-lazy"]["result"]["schemes"]
    assert lazy["absorption-lazy"]["steps"][-1]["state_bytes_per_node_max"] > 0


def test_a_ladder_series_stops_at_its_first_unfinished_step() -> None:
    from aspen.bench.run import _run_plan

    steps = {str(n): ("peers.compare", {"tiny": True, "updates": 1, "peers": ["networkx"]})
             for n in (100, 1000)}
    lines: list[str] = []
    done = _run_plan({"ladder-dense": steps}, cutoff=0.05, timeouts={}, jobs=1, log=lines.append)
    first, second = done["ladder-dense"]["100"], done["ladder-dense"]["1000"]
    assert first["status"] == "timeout"
    assert second["status"] == "skipped" and "100-node step did not finish" in second["note"]


def test_merge_combines_runs_into_one_report(results: tuple[Path, dict], tmp_path: Path) -> None:
    out, data = results
    assert main(["bench", "--merge", str(out), str(out), "--out", str(tmp_path)]) == 0
    merged = json.loads((tmp_path / "results.json").read_text())
    assert merged["experiments"].keys() == data["experiments"].keys()
    assert merged["total_s"] == 2 * data["total_s"]
    assert [t["met"] for t in merged["targets"]] == [t["met"] for t in data["targets"]]
    assert (tmp_path / "summary.md").stat().st_size > 0


def test_region_query_runs_every_scheme_to_the_same_view(results: tuple[Path, dict]) -> None:
    out, data = results
    runs = {s: r["result"] for s, r in data["experiments"]["regions"].items()}
    assert set(runs) == {"absorption-lazy", "absorption-eager", "dred", "relative"}
    rows = {s: res["schemes"][s] for s, res in runs.items()}
    assert len({row["view_tuples"] for row in rows.values()}) == 1
    assert all(row["deletions"] == min(res["triggered"], 20) for row, res in
               zip(rows.values(), runs.values(), strict=True))
    assert "| regions (one sensor un-triggered per batch)" in (out / "summary.md").read_text()
