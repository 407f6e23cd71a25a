"""A round of queries after a maintained batch records each query's path and cost in
``query_batches``: an incremental query its step, seconds and result rows changed; a
recomputed one (here a stand-in for the Spark run) its result rows; a failed one its path."""

from __future__ import annotations

import json
from pathlib import Path

from aspen.lake.ingest import ingest_files
from aspen.pipeline import ledger
from aspen.pipeline.maintain_local import maintain_local
from aspen.queries.batch_costs import read_batch_costs
from aspen.queries.execute import RunReport
from aspen.queries.incremental.maintain import forget_held
from aspen.queries.registry import register
from aspen.queries.runner import run_registered
from aspen.settings import Settings


def _batch(lake: Settings, root: Path, n: int, records: list[dict]) -> int:
    path = root / f"b{n}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest_files(lake, [path])
    maintain_local(lake)
    return ledger.last_committed(lake).batch_id


def _link(src: str, dst: str) -> dict:
    return {"op": "insert", "relation": "link", "src": src, "dst": dst, "cost": 1.0}


def test_each_round_appends_every_query_path_and_cost(tmp_path: Path) -> None:
    lake = Settings(lake=str(tmp_path / "lake"))
    forget_held()
    register(lake, "per_src", "SELECT src, COUNT(*) AS n FROM link GROUP BY src")
    register(lake, "dated", "SELECT year(first_inserted_at) AS y, COUNT(*) AS n FROM link "
                            "GROUP BY y")
    register(lake, "broken", "SELECT month(first_inserted_at) AS m FROM link")

    def recompute(name: str, _group: str) -> RunReport:
        if name == "broken":
            raise RuntimeError("boom")
        return RunReport(name, "r", {}, 0.0, 5, 0.1, ())

    first = _batch(lake, tmp_path, 1, [_link("a", "b"), _link("a", "c")])
    run_registered(None, lake, first, run_one=recompute, cancel=lambda _g: None)
    second = _batch(lake, tmp_path, 2, [_link("b", "c")])
    run_registered(None, lake, second, run_one=recompute, cancel=lambda _g: None)

    costs = read_batch_costs(lake, "per_src")
    assert [(c.batch_id, c.path, c.mode, c.rows_changed) for c in costs] == [
        (first, "incremental", "built", 1), (second, "incremental", "incremental", 1)]
    assert all(c.seconds >= 0 and c.state_rows for c in costs)
    dated = read_batch_costs(lake, "dated")
    assert [(c.path, c.result_rows, c.rows_changed) for c in dated] == [
        ("recomputed", 5, None), ("recomputed", 5, None)]
    broken = read_batch_costs(lake, "broken")
    assert [(c.batch_id, c.path, c.rows_changed, c.result_rows) for c in broken] == [
        (first, "failed", None, None), (second, "failed", None, None)]
    assert read_batch_costs(lake, "nope") == []


def test_a_round_not_after_a_batch_records_no_cost(tmp_path: Path) -> None:
    lake = Settings(lake=str(tmp_path / "lake"))
    register(lake, "dated", "SELECT year(first_inserted_at) AS y FROM link")
    run_registered(None, lake, None, run_one=lambda n, g: RunReport(n, "r", {}, 0.0, 1, 0.1, ()),
                   cancel=lambda _g: None)
    assert read_batch_costs(lake, "dated") == []
