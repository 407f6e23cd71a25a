"""The latency benchmark's pure parts (aspen.bench.latency): options, summaries, targets."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from aspen.bench.latency import (
    MODES,
    BatchTiming,
    Cell,
    Toggle,
    batch_rows,
    cell_targets,
    comma_list,
    ingest_batch_of,
    node_counts,
    offers_option,
    phase_jobs,
    summarize,
    table,
    target_for,
    verdict,
    write_outputs,
)

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "latency.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("latency_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(mode: str = "warm", runtime: str = "spark", nodes: int = 100,
          latencies: tuple[float, ...] = (1.0, 2.0, 3.0), jobs: int | None = 12) -> Cell:
    batches = [BatchTiming(i, "delete" if i % 2 == 0 else "insert", "a", "b", s,
                           ingest_s=s / 2, maintain_s=s / 2, ledger_batch=i + 2,
                           jobs={} if jobs is None else {"apply": jobs - 2, "write": 2},
                           jobs_total=jobs)
               for i, s in enumerate(latencies)]
    return Cell(nodes, 240, runtime, mode, batches, verify="pass")


def test_the_options_parse_and_check() -> None:
    script = _script()
    args = script.parse_args(["--nodes", "20", "--runtimes", "local", "--batches", "2",
                              "--modes", "cold,warm", "--out", "/tmp/x"])
    assert (args.nodes, args.runtimes, args.batches, args.modes, args.out) == (
        [20], ["local"], 2, ["cold", "warm"], "/tmp/x")
    defaults = script.parse_args([])
    assert defaults.nodes == [100, 1000] and defaults.runtimes == ["local", "spark"]
    assert defaults.modes == list(MODES) and defaults.batches == 10
    for bad in (["--runtimes", "gpu"], ["--nodes", "0"], ["--nodes", "x"], ["--batches", "0"],
                ["--modes", ","]):
        with pytest.raises(SystemExit):
            script.parse_args(bad)


def test_lists_are_split_deduplicated_and_checked() -> None:
    assert comma_list(" warm ,cold,warm", MODES) == ["warm", "cold"]
    assert node_counts("100, 1000") == [100, 1000]
    with pytest.raises(ValueError, match="unknown 'hot'"):
        comma_list("cold,hot", MODES)
    with pytest.raises(ValueError, match="at least 1"):
        node_counts("-5")


def test_summary_is_median_and_nearest_rank_p90() -> None:
    assert summarize(float(v) for v in range(1, 11)) == {"n": 10, "median": 5.5, "p90": 9.0}
    assert summarize([None, 7.0]) == {"n": 1, "median": 7.0, "p90": 7.0}
    assert summarize([]) == {"n": 0, "median": None, "p90": None}


def test_verdicts_are_ratios_to_the_target() -> None:
    assert verdict(1.9, 2.0) == "met (×0.95)"
    assert verdict(2.0, 2.0) == "met (×1.00)"
    assert verdict(21.0, 15) == "missed by ×1.40"
    assert verdict(None, 5.0) == "not measured"


def test_a_lake_is_held_to_the_next_listed_size() -> None:
    sizes = {100: 2.0, 1000: 5.0}
    assert target_for(sizes, 22) == (100, 2.0)
    assert target_for(sizes, 100) == (100, 2.0)
    assert target_for(sizes, 101) == (1000, 5.0)
    assert target_for(sizes, 2000) is None


def test_jobs_per_phase_come_from_the_metric_totals() -> None:
    totals = {"apply_spark_jobs": 4.0, "read_spark_jobs": 1.0, "write_spark_jobs": 3.0,
              "spark_jobs": 8.0, "wall_seconds": 9.5, "messages": 3.0}
    assert phase_jobs(totals) == ({"apply": 4, "read": 1, "write": 3}, 8)
    assert phase_jobs({"apply_spark_jobs": 2.0}) == ({"apply": 2}, 2)
    assert phase_jobs({"wall_seconds": 1.0}) == ({}, None)


def test_cli_output_is_read() -> None:
    assert offers_option("usage: aspen maintain [--follow] [--inbox DIR]", "--inbox")
    assert offers_option("  --inbox=DIR  watch it", "--inbox")
    assert not offers_option("  --follow  keep running", "--inbox")
    assert ingest_batch_of("batch 12: 1 record(s) appended to updates") == 12
    assert ingest_batch_of("nothing") is None


def test_the_toggle_deletes_then_reinserts_the_same_link() -> None:
    toggle = Toggle([("a", "b", 1.0), ("b", "c", 2.0), ("c", "a", 3.0)], seed=1)
    records = [toggle.next() for _ in range(6)]
    assert [r["op"] for r in records] == ["delete", "insert"] * 3
    for deleted, inserted in zip(records[::2], records[1::2], strict=True):
        assert (deleted["src"], deleted["dst"]) == (inserted["src"], inserted["dst"])


def test_cells_are_held_to_their_targets() -> None:
    warm = cell_targets(_cell("warm", nodes=1000, latencies=(4.0, 6.0, 7.0)).summary())
    assert [(t["target"], t["verdict"]) for t in warm] == [
        ("warm ≤ 5 s at 1,000 nodes", "missed by ×1.20"),
        ("≤ 15 Spark jobs a one-link batch", "met (×0.80)")]
    cold = cell_targets(_cell("cold", runtime="local", jobs=None).summary())
    assert [t["target"] for t in cold] == ["cold ingest + maintain ≤ 30 s at 100 nodes"]
    assert cell_targets(_cell("cold", nodes=1000, jobs=None).summary()) == []
    empty = Cell(100, 240, "local", "inbox", note="skipped").summary()
    assert [t["verdict"] for t in cell_targets(empty)] == ["not measured"]


def test_the_table_and_the_files(tmp_path: Path) -> None:
    cells = [_cell("warm"), _cell("cold", runtime="local", jobs=None),
             Cell(100, 240, "local", "inbox", note="skipped: no --inbox")]
    result = {"cells": [c.summary() for c in cells]}
    text = table(result)
    assert "apply 10, write 2 = 12" in text and "none recorded" in text
    assert "skipped: no --inbox" in text and "missed by" not in text
    write_outputs(result, cells, tmp_path)
    assert json.loads((tmp_path / "latency.json").read_text())["cells"][0]["mode"] == "warm"
    with (tmp_path / "batches.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6 and rows[0]["jobs_apply"] == "10" and rows[3]["jobs_apply"] == ""
    assert batch_rows([]) == []
