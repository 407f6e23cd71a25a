"""maintain_incremental on a real lake (in process, local runtime, no Spark): after every
maintained batch each query's ``q_<name>`` equals DuckDB's answer of the same SQL over the
lake's rows as of that batch; a batch applies exactly once; a crash between the state and the
result write is repaired by the rerun; the state read back from Delta is the state held."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable
from incremental_cases import rounded

from aspen.errors import LakeError
from aspen.lake.deltars import read_table
from aspen.lake.ingest import ingest_files
from aspen.pipeline import ledger
from aspen.pipeline.maintain_local import maintain_local
from aspen.queries.base_tuples import tuples_pandas
from aspen.queries.incremental import maintain as maintain_module
from aspen.queries.incremental.compile import compile_query
from aspen.queries.incremental.delta import diff, plain_row
from aspen.queries.incremental.expr import NotIncrementalError
from aspen.queries.incremental.lake_delta import (
    batch_changes,
    batch_points,
    table_columns,
    table_rows,
)
from aspen.queries.incremental.maintain import forget_held, maintain_incremental
from aspen.queries.incremental.scratch import scratch_answer
from aspen.queries.incremental.store import read_state, result_batch, state_table
from aspen.queries.names import result_table
from aspen.queries.sql import parse_query
from aspen.settings import Settings

QUERIES = {
    "per_src": "SELECT src, COUNT(*) AS n, SUM(cost) AS c, MAX(cost) AS hi FROM link GROUP BY src",
    "two_hops": "SELECT a.src, b.dst FROM link a JOIN link b ON a.dst = b.src WHERE b.cost > 1",
    "renewed": "SELECT src, dst, instances FROM link WHERE instances > 1",
    "reach": "SELECT src, COUNT(*) AS n FROM reachable GROUP BY src",
    "via": "SELECT l.src, MIN(m.cost) AS c, COUNT(*) AS n FROM link l JOIN min_cost m "
           "ON l.dst = m.src GROUP BY l.src",
    "total": "SELECT COUNT(*) AS n, AVG(cost) AS mean FROM link",
    "paths": "SELECT src, dst, path FROM cheapest_path WHERE cost > 2",
    "latest": "SELECT src, MAX(last_inserted_at) AS at, MIN(first_batch_id) AS b FROM link "
              "GROUP BY src",
}


#: The tables whose batch changes are checked against the whole tables' difference.
CHANGED_TABLES = ("link", "reachable", "min_cost", "cheapest_path")


def _link(op: str, src: str, dst: str, cost: float | None = None) -> dict:
    record = {"op": op, "relation": "link", "src": src, "dst": dst}
    return record | ({"cost": cost} if cost is not None else {})


BATCHES = [
    [_link("insert", "a", "b", 1.0), _link("insert", "b", "c", 2.0),
     _link("insert", "c", "a", 3.0), _link("insert", "c", "d", 1.5)],
    [_link("insert", "d", "a", 2.0)],                       # a new link closes a cycle
    [_link("insert", "a", "b", 1.0)],                       # a renewal: instances 2
    [_link("insert", "b", "c", 5.0)],                       # a replacement: −old +new
    [_link("delete", "c", "a")],
    [],                                                     # an empty batch
    [_link("delete", "a", "b"), _link("insert", "a", "e", 4.0), _link("insert", "e", "b", 1.0)],
    [_link("insert", "b", "d", 2.0)],                       # maintained with a rebuild
    [_link("delete", "e", "b")],
]
#: The batch maintained with ``--rebuild``: the views' changes are read whole there.
REBUILT = 7


def _ingest(lake: Settings, root: Path, n: int, records: list[dict]) -> None:
    path = root / f"batch{n}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest_files(lake, [path])


def _result(lake: Settings, name: str) -> dict[tuple, int]:
    frame = read_table(lake, result_table(name))
    names = [o.name for o in parse_query(name, QUERIES[name]).spec.outputs]
    return dict(Counter(plain_row(r) for r in frame[names].itertuples(index=False, name=None)))


def _expected(lake: Settings, name: str, batch_id: int) -> dict[tuple, int]:
    parsed = parse_query(name, QUERIES[name])
    _, point = batch_points(lake, batch_id)
    return scratch_answer(parsed, {t: table_rows(lake, t, point) for t in parsed.tables})


@pytest.fixture(scope="module")
def maintained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, list[dict]]:
    """A lake through :data:`BATCHES`, every query maintained after each batch (twice); per
    batch and query what was seen."""
    root = tmp_path_factory.mktemp("incremental")
    lake = Settings(lake=str(root / "lake"))
    forget_held()
    seen: list[dict] = []
    last = -1
    for n, records in enumerate(BATCHES):
        if records:
            _ingest(lake, root, n, records)
        maintain_local(lake, rebuild=n == REBUILT)  # a rebuild rewrites the view snapshots
        batch = ledger.last_committed(lake).batch_id
        before, point = batch_points(lake, batch)
        changes = batch_changes(lake, CHANGED_TABLES, before, point)
        whole = {t: diff(table_columns(t), table_rows(lake, t, before).counts,
                         table_rows(lake, t, point).counts).counts for t in CHANGED_TABLES}
        stored = tuples_pandas("link", read_table(lake, "link"))
        for name, sql in QUERIES.items():
            report = maintain_incremental(lake, name, parse_query(name, sql), batch)
            again = maintain_incremental(lake, name, parse_query(name, sql), batch)
            seen.append({
                "batch": batch, "new": batch != last, "name": name, "mode": report.mode,
                "again": again, "result": _result(lake, name),
                "expected": _expected(lake, name, batch), "shown": result_batch(lake, name),
                "changes": {t: c.counts for t, c in changes.items()}, "whole": whole,
                "registry_link": table_rows(lake, "link", point).counts,
                "stored_link": dict(Counter(plain_row(r) for r in stored.itertuples(
                    index=False, name=None)))})
        last = batch
    return lake, seen


@pytest.fixture
def lake(maintained: tuple[Settings, list[dict]]) -> Settings:
    return maintained[0]


def test_every_batch_matches_recompute_and_applies_once(
        maintained: tuple[Settings, list[dict]]) -> None:
    _, seen = maintained
    for case in seen:
        label = (case["batch"], case["name"])
        assert rounded(case["result"]) == rounded(case["expected"]), label
        assert case["shown"] == case["batch"], label
        assert case["again"].mode == "already applied" and case["again"].rows_changed == 0
        # the changes read per touched key are the whole tables' difference
        assert case["changes"] == case["whole"], label
        # the registry's tuples are the base table's own, as a query reads it
        assert case["registry_link"] == case["stored_link"], label
    new = [c["mode"] for c in seen if c["new"]]
    assert new[:len(QUERIES)] == ["built"] * len(QUERIES)
    assert set(new[len(QUERIES):]) == {"incremental"}
    # nothing ingested: no new batch, nothing to apply
    assert {c["mode"] for c in seen if not c["new"]} == {"already applied"}
    assert any(not c["new"] for c in seen)


def test_the_state_read_back_is_the_state_held(lake: Settings) -> None:
    batch = ledger.last_committed(lake).batch_id
    for name, sql in QUERIES.items():
        parsed = parse_query(name, sql)
        _, version, query = maintain_module._HELD[(lake.lake_uri, name)]
        held = query.state
        assert version == DeltaTable(lake.table_uri(state_table(name))).version()  # held is used
        stored = read_state(lake, name, compile_query(parsed))
        assert stored is not None and stored.state.batch_id == batch
        assert stored.state.groups == held.groups and stored.state.rows == held.rows


def test_what_is_not_incremental_or_not_committed_is_refused(lake: Settings) -> None:
    batch = ledger.last_committed(lake).batch_id
    parsed = parse_query("odd", "SELECT DISTINCT COUNT(*) AS n FROM link GROUP BY src")
    with pytest.raises(NotIncrementalError, match="DISTINCT over an aggregating query"):
        maintain_incremental(lake, "odd", parsed, batch)
    with pytest.raises(LakeError, match="not committed"):
        maintain_incremental(lake, "per_src", parse_query("per_src", QUERIES["per_src"]),
                             batch + 5)


def test_a_crash_between_state_and_result_is_repaired_by_the_rerun(
        lake: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _ingest(lake, tmp_path, 99, [_link("insert", "e", "f", 7.0), _link("delete", "d", "a")])
    maintain_local(lake)
    batch = ledger.last_committed(lake).batch_id
    parsed = parse_query("per_src", QUERIES["per_src"])

    def crash(*_args, **_kwargs):
        raise RuntimeError("crash after the state write")

    monkeypatch.setattr(maintain_module, "apply_result", crash)
    with pytest.raises(RuntimeError):
        maintain_incremental(lake, "per_src", parsed, batch)
    assert result_batch(lake, "per_src") == batch - 1
    monkeypatch.undo()
    forget_held()  # a new process: reads the state the crashed run committed
    report = maintain_incremental(lake, "per_src", parsed, batch)
    assert report.mode == "result rewritten"
    assert rounded(_result(lake, "per_src")) == rounded(_expected(lake, "per_src", batch))


def test_a_state_for_other_sql_or_behind_is_rebuilt(lake: Settings, tmp_path: Path) -> None:
    batch = ledger.last_committed(lake).batch_id
    other = parse_query("per_src", "SELECT src, COUNT(*) AS n, SUM(cost) AS c, MAX(cost) AS hi "
                                   "FROM link WHERE cost > 1 GROUP BY src")
    assert maintain_incremental(lake, "per_src", other, batch).mode == "built"
    _ingest(lake, tmp_path, 100, [_link("insert", "f", "a", 1.0)])
    maintain_local(lake)
    _ingest(lake, tmp_path, 101, [_link("insert", "f", "b", 1.0)])
    maintain_local(lake)
    latest = ledger.last_committed(lake).batch_id
    assert maintain_incremental(lake, "per_src", other, latest).mode == "built"  # 2 behind


def test_a_state_that_cannot_take_the_batch_is_rebuilt_and_an_older_batch_is_a_no_op(
        lake: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aspen.queries.incremental.apply import IncrementalQuery
    from aspen.queries.incremental.state import StateError

    parsed = parse_query("total", QUERIES["total"])
    batch = ledger.last_committed(lake).batch_id
    maintain_incremental(lake, "total", parsed, batch)
    _ingest(lake, tmp_path, 102, [_link("insert", "g", "h", 2.5)])
    maintain_local(lake)
    latest = ledger.last_committed(lake).batch_id

    def refuse(self, changes):
        if self.state.batch_id >= 0:  # a stored state; a build starts from an empty one
            raise StateError("group () would count -1 rows")
        return apply(self, changes)

    apply = IncrementalQuery.apply

    monkeypatch.setattr(IncrementalQuery, "apply", refuse)
    assert maintain_incremental(lake, "total", parsed, latest).mode == "built"
    monkeypatch.undo()
    assert rounded(_result(lake, "total")) == rounded(_expected(lake, "total", latest))
    older = maintain_incremental(lake, "total", parsed, latest - 1)
    assert older.mode == "already applied" and result_batch(lake, "total") == latest
