"""Plans that follow the data, on a lake maintained in process (no Spark): a registered join
whose inputs' sizes flip is re-planned after the batch that flips them — recorded in ``plans``
with the statistics that moved, the next batch joined in the new plan's order — its result
equals DuckDB's before and after; a crash between the state write and the plan write reruns to
the same tables; ``aspen query show`` tells the plan's last change and why."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from aspen.crashpoints import CRASH_AT
from aspen.lake.deltars import read_table
from aspen.lake.ingest import ingest_files
from aspen.pipeline import ledger
from aspen.pipeline.maintain_local import maintain_local
from aspen.queries.follow import forget_planned, plan_story
from aspen.queries.incremental.delta import plain_row
from aspen.queries.incremental.lake_delta import batch_points, table_rows
from aspen.queries.incremental.maintain import forget_held
from aspen.queries.incremental.scratch import scratch_answer
from aspen.queries.names import result_table
from aspen.queries.optimizer_state import load_state
from aspen.queries.plans import plan_history
from aspen.queries.registry import get_query, register
from aspen.queries.runner import AFTER_STATE, run_registered
from aspen.queries.sql import parse_query
from aspen.settings import Settings

NAME = "seeded"
#: Per region, the links from its seeds to triggered sensors: ``l`` joins ``r`` by its source
#: and ``t`` by its destination; which of the two keeps fewer of a link's rows flips.
SQL = ("SELECT r.region, COUNT(*) AS n FROM region_seed r JOIN link l ON l.src = r.id "
       "JOIN triggered t ON t.id = l.dst GROUP BY r.region")


def _link(src: str, dst: str, cost: float = 1.0) -> dict:
    return {"op": "insert", "relation": "link", "src": src, "dst": dst, "cost": cost}


BATCHES = [
    # one seed, every destination triggered: a link's seed is the rare side
    [_link(f"s{i % 10}", f"d{i}") for i in range(30)]
    + [{"op": "insert", "relation": "triggered", "id": f"d{i}"} for i in range(30)]
    + [{"op": "insert", "relation": "region_seed", "region": "r1", "id": "s0"}],
    [_link("s1", "d5", 2.0)],
    # the flip: every source a seed of two regions, two destinations still triggered
    [{"op": "insert", "relation": "region_seed", "region": f"r{k}", "id": f"s{i}"}
     for i in range(10) for k in (1, 2)]
    + [{"op": "delete", "relation": "triggered", "id": f"d{i}"} for i in range(2, 30)],
    [_link("s2", "d1", 2.0), _link("s3", "d0", 3.0)],
]
FLIP = 2


def _no_spark(_name: str, _group: str):
    raise AssertionError("an incremental query must not be recomputed on Spark")


def _run(lake: Settings) -> tuple[int, object]:
    batch = ledger.last_committed(lake).batch_id
    (outcome,) = run_registered(None, lake, batch, run_one=_no_spark, cancel=lambda _g: None)
    return batch, outcome


def _result(lake: Settings) -> dict[tuple, int]:
    frame = read_table(lake, result_table(NAME))
    return dict(Counter(plain_row(r) for r in frame[["region", "n"]].itertuples(
        index=False, name=None)))


def _expected(lake: Settings, batch: int) -> dict[tuple, int]:
    parsed = parse_query(NAME, SQL)
    _, point = batch_points(lake, batch)
    return scratch_answer(parsed, {t: table_rows(lake, t, point) for t in parsed.tables})


def _fresh_process() -> None:
    forget_held()
    forget_planned()


def _lake(root: Path) -> Settings:
    lake = Settings(lake=str(root / "lake"))
    register(lake, NAME, SQL)
    _fresh_process()
    return lake


def _ingest(lake: Settings, root: Path, n: int) -> None:
    path = root / f"batch{n}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in BATCHES[n]))
    ingest_files(lake, [path])
    maintain_local(lake)


@pytest.fixture(scope="module")
def drifted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, list]:
    root = tmp_path_factory.mktemp("drift")
    lake = _lake(root)
    seen = []
    for n in range(len(BATCHES)):
        _ingest(lake, root, n)
        batch, outcome = _run(lake)
        seen.append((batch, outcome, _result(lake), _expected(lake, batch),
                     get_query(lake, NAME).plan))
    return lake, seen


def test_the_plan_changes_after_the_batch_that_flips_the_sizes(
        drifted: tuple[Settings, list]) -> None:
    lake, seen = drifted
    for batch, outcome, result, expected, _plan in seen:
        assert outcome.error is None, outcome.error
        assert outcome.report.mode in ("built", "incremental")
        assert result == expected, batch  # before and after the plan change
    history = plan_history(lake, NAME)
    assert [c.reason for c in history] == ["initial", "statistics"]
    change = history[-1]
    assert json.loads(change.versions) == {"batch": seen[FLIP][0]}
    moved = {(c["kind"], c["name"]) for c in change.change_list}
    assert {("rows", "region_seed"), ("rows", "triggered")} <= moved
    assert change.old_cost is not None and change.old_cost > change.new_cost
    # the plans before and after the flip put the rarer side first under the link
    before, after = seen[FLIP - 1][4], seen[FLIP][4]
    assert before != after and after == json.loads(change.new_plan)
    # a link's change bound the seed first while seeds were rare, the trigger after the flip
    orders = [dict(zip(("r", "l", "t"), o.report.orders, strict=True))["l"]
              for _, o, *_ in seen]
    assert orders[FLIP] == ("r", "t") and orders[FLIP + 1] == ("t", "r")
    assert "plan changed" in seen[FLIP][1].report.note
    assert seen[FLIP + 1][1].report.note.startswith(("plan kept", "re-planned"))
    # the optimizer is at the statistics the batch left, incrementally
    saved = load_state(lake, NAME)
    assert saved is not None
    assert saved.stats.rows("triggered") == 2.0 and saved.stats.rows("region_seed") == 20.0


def test_query_show_tells_when_and_why_the_plan_changed(drifted: tuple[Settings, list]) -> None:
    lake, seen = drifted
    lines = plan_story(lake, get_query(lake, NAME))
    assert lines[0].startswith("plan last changed") and f"batch {seen[FLIP][0]}" in lines[0]
    assert any("rows of region_seed 1 → 20" in line for line in lines)
    assert lines[-1] == "delta join order: Δr: l, t; Δl: t, r; Δt: l, r"


def _tables(lake: Settings) -> dict:
    """What the batches wrote, without times and the optimizer's own work."""
    plans = [(c.reason, c.old_plan, c.new_plan, c.old_cost, c.new_cost, c.changes, c.versions)
             for c in plan_history(lake, NAME)]
    entry = get_query(lake, NAME)
    saved = load_state(lake, NAME)
    return {"result": _result(lake), "plans": plans, "plan": entry.plan_json,
            "stats": entry.stats_json, "optimizer_at": saved.stats.to_json() if saved else None}


def test_a_crash_between_the_state_and_the_plan_write_reruns_to_the_same_tables(
        drifted: tuple[Settings, list], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake, _ = drifted
    crashed = _lake(tmp_path)
    for n in range(len(BATCHES)):
        _ingest(crashed, tmp_path, n)
        if n == FLIP:
            monkeypatch.setenv(CRASH_AT, AFTER_STATE)
            batch, outcome = _run(crashed)
            assert "crash injected" in str(outcome.error)
            assert [c.reason for c in plan_history(crashed, NAME)] == ["initial"]
            monkeypatch.delenv(CRASH_AT)
            _fresh_process()  # the rerun is a new process
            batch, outcome = _run(crashed)
            assert outcome.report.mode == "already applied"
            assert "plan changed" in outcome.report.note
            _fresh_process()
            batch, outcome = _run(crashed)  # and once more: nothing new
            assert outcome.report.note == "plan kept"
        else:
            _run(crashed)
    assert _tables(crashed) == _tables(lake)


def test_a_crash_inside_the_plan_write_records_the_change_once(
        drifted: tuple[Settings, list], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aspen.queries import reoptimize

    lake, _ = drifted
    crashed = _lake(tmp_path)
    for n in range(FLIP + 1):
        _ingest(crashed, tmp_path, n)
        if n < FLIP:
            _run(crashed)
    store = reoptimize.store_plan

    def crash(*args, **kwargs):
        raise RuntimeError("crash after the plans row, before the registry")

    monkeypatch.setattr(reoptimize, "store_plan", crash)
    _, outcome = _run(crashed)
    assert outcome.error is not None and len(plan_history(crashed, NAME)) == 2
    monkeypatch.setattr(reoptimize, "store_plan", store)
    _fresh_process()
    _, outcome = _run(crashed)
    assert "plan changed" in outcome.report.note
    assert [c.reason for c in plan_history(crashed, NAME)] == ["initial", "statistics"]
    assert get_query(crashed, NAME).plan == json.loads(plan_history(crashed, NAME)[-1].new_plan)


def test_a_join_state_stored_without_its_table_counts_is_built_again(
        drifted: tuple[Settings, list]) -> None:
    import pyarrow.compute as pc
    from deltalake import DeltaTable, write_deltalake

    from aspen.queries.incremental.maintain import maintain_incremental
    from aspen.queries.incremental.store import state_table

    lake, seen = drifted
    batch = seen[-1][0]
    table = DeltaTable(lake.table_uri(state_table(NAME)))
    rows = table.to_pyarrow_table()
    older = rows.filter(pc.invert(pc.starts_with(rows["key"], "rows:")))
    assert older.num_rows < rows.num_rows
    write_deltalake(table, older, mode="overwrite")
    _fresh_process()
    report = maintain_incremental(lake, NAME, parse_query(NAME, SQL), batch,
                                  get_query(lake, NAME).plan)
    assert report.mode == "built" and report.statistics is not None
    assert report.statistics["tables"]["triggered"]["rows"] == 2.0
    assert _result(lake) == _expected(lake, batch)
