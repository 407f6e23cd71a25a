"""Continuous queries that keep provenance, in process (DuckDB, no Spark): the formulas kept in
``q_NAME`` mean what they say (a row is in the answer over a subset S of the base tuples iff its
formula is true under S, for every S), rounds after a batch run such a query whole with its
formulas, ``aspen query run --provenance`` prints what ``aspen sql --provenance`` prints, wrong
use is one line, and a registry written before the ``provenance`` column still reads."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime

import pandas as pd
import pytest

from aspen.cli.main import main
from aspen.lake.deltars import read_table
from aspen.lake.ingest import ingest_files
from aspen.pipeline.maintain_local import maintain_local
from aspen.queries.query_provenance import ProvenanceReport
from aspen.queries.registry import QUERIES_TABLE, get_query, list_queries, register
from aspen.queries.runner import run_registered
from aspen.queries.status import read_statuses
from aspen.settings import Settings
from aspen.sqlprov.run import run_frames

RECORDS = [
    {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "a", "dst": "c", "cost": 3.0},
    {"op": "insert", "relation": "link", "src": "a", "dst": "c", "cost": 3.0},  # a renewal
    {"op": "insert", "relation": "sensor", "id": "c", "x": 0.0, "y": 0.0},
    {"op": "insert", "relation": "triggered", "id": "b"},
]

#: The lake's live base tuples: variable name → (table, values).
TUPLES = {"link:a:b": ("link", ("a", "b", 1.0)), "link:b:c": ("link", ("b", "c", 1.0)),
          "link:a:c": ("link", ("a", "c", 3.0)), "sensor:c": ("sensor", ("c", 0.0, 0.0)),
          "triggered:b": ("triggered", ("b",))}

#: (name, SQL, the output columns a row is compared on over a subset)
QUERIES = [
    ("two_hop", "SELECT a.src, b.dst FROM link a JOIN link b ON a.dst = b.src", ("src", "dst")),
    ("fan_out", "SELECT a.src, COUNT(*) AS n FROM link a GROUP BY a.src", ("src",)),
    ("sensed", "SELECT DISTINCT s.id FROM sensor s, link l WHERE s.id = l.dst", ("id",)),
]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("qprov")
    settings = Settings(lake=str(root / "lake"))
    path = root / "first.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    ingest_files(settings, [path])
    maintain_local(settings)
    for name, sql, _ in QUERIES:
        register(settings, name, sql, provenance=True)
    register(settings, "plain", "SELECT a.src FROM link a")
    return settings


def _aspen(lake: Settings, *argv: str) -> int:
    try:
        return main(["--lake", lake.lake, *argv])
    except SystemExit as exit_info:
        return int(exit_info.code or 0)


def _frames(keep: set[str]) -> dict[str, pd.DataFrame]:
    rows: dict[str, list[tuple]] = {"link": [], "sensor": [], "triggered": []}
    for name, (table, values) in TUPLES.items():
        if name in keep:
            rows[table].append(values)
    return {"link": pd.DataFrame(rows["link"], columns=["src", "dst", "cost"]),
            "sensor": pd.DataFrame(rows["sensor"], columns=["id", "x", "y"]),
            "triggered": pd.DataFrame(rows["triggered"], columns=["id"])}


def _holds(formula: object, present: set[str]) -> bool:
    """A rendered formula (``{"var": …}``, ``{"and": […]}``, …) under the tuples ``present``."""
    if isinstance(formula, bool):
        return formula
    assert isinstance(formula, dict) and len(formula) == 1
    ((op, arg),) = formula.items()
    if op == "var":
        return arg in present
    if op == "not":
        return not _holds(arg, present)
    results = [_holds(f, present) for f in arg]
    return all(results) if op == "and" else any(results)


@pytest.mark.parametrize(("name", "sql", "compared"), QUERIES, ids=[q[0] for q in QUERIES])
def test_kept_formulas_mean_membership_over_every_subset(lake, capsys, name, sql,
                                                         compared) -> None:
    assert _aspen(lake, "query", "run", name, "--engine", "duckdb") == 0
    assert "rows with provenance into q_" + name in capsys.readouterr().out
    kept = read_table(lake, "q_" + name)
    assert list(kept.columns)[-1] == "provenance" and len(kept) > 0
    formulas = {tuple(r[c] for c in compared): json.loads(r["provenance"])
                for r in kept.to_dict("records")}
    names = sorted(TUPLES)
    for bits in itertools.product((False, True), repeat=len(names)):
        keep = {n for n, bit in zip(names, bits, strict=True) if bit}
        again = run_frames(_frames(keep), sql, provenance=False)
        index = [again.columns.index(c) for c in compared]
        present = {tuple(row[i] for i in index) for row in again.rows}
        for row, formula in formulas.items():
            assert (row in present) == _holds(formula, keep), (name, row, sorted(keep))
        assert present <= set(formulas), (name, sorted(keep))  # monotone: no new rows


def test_a_round_after_a_batch_runs_them_whole_with_formulas(lake) -> None:
    def not_by_plan(name: str, group: str):
        assert name == "plain", f"{name} keeps provenance: never run by its plan"
        raise RuntimeError("no Spark here")  # (plain is maintained incrementally first)

    outcomes = {o.name: o for o in run_registered(None, lake, batch_id=1, run_one=not_by_plan,
                                                  cancel=lambda g: None,
                                                  provenance_engine="duckdb")}
    for name, _, _ in QUERIES:  # not incrementally either: a full instrumented run
        assert isinstance(outcomes[name].report, ProvenanceReport), outcomes[name]
        assert outcomes[name].status == "ok" and "with provenance" in outcomes[name].line()
    assert not isinstance(outcomes["plain"].report, ProvenanceReport)  # as before
    two_hop = read_table(lake, "q_two_hop").to_dict("records")
    assert [(r["src"], r["dst"], json.loads(r["provenance"])) for r in two_hop] == [
        ("a", "c", {"and": [{"var": "link:a:b"}, {"var": "link:b:c"}]})]
    statuses = read_statuses(lake)
    assert statuses["two_hop"].status == "ok" and statuses["two_hop"].run_id


def test_run_with_provenance_prints_what_aspen_sql_prints(lake, capsys) -> None:
    sql = QUERIES[2][1]
    assert _aspen(lake, "sql", sql, "--provenance", "--format", "json", "--engine",
                  "duckdb") == 0
    expected = json.loads(capsys.readouterr().out)
    assert _aspen(lake, "query", "run", "plain", "--provenance", "--format", "json",
                  "--engine", "duckdb") == 0
    captured = capsys.readouterr()
    a = {"values": {"src": "a"}, "provenance": {"or": [{"var": "link:a:b"},
                                                       {"var": "link:a:c"}]}}
    b = {"values": {"src": "b"}, "provenance": {"var": "link:b:c"}}
    # a bag answer: a twice (a→b, a→c), both rows with the condition for a to be in it
    assert sorted(json.loads(captured.out), key=lambda r: r["values"]["src"]) == [a, a, b]
    assert "q_plain not written" in captured.err
    assert _aspen(lake, "query", "run", "sensed", "--provenance", "--format", "json",
                  "--engine", "duckdb") == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert _aspen(lake, "query", "run", "sensed", "--provenance", "--why", "0", "--format",
                  "json", "--engine", "duckdb") == 0
    why = json.loads(capsys.readouterr().out)
    assert why["witnesses"] == [["link:a:c", "sensor:c"], ["link:b:c", "sensor:c"]]
    assert why["critical"] == ["sensor:c"]
    assert _aspen(lake, "query", "show", "sensed") == 0
    out = capsys.readouterr().out
    assert "provenance: kept" in out and "never incrementally" in out


@pytest.mark.parametrize("argv, fragment", [
    (["run", "plain", "--why", "0"], "--why needs --provenance"),
    (["run", "plain", "--format", "json"], "--format needs --provenance"),
    (["run", "plain", "--engine", "duckdb"], "--engine is for runs with provenance"),
    (["run", "plain", "--provenance", "--replan"], "leave them out"),
    (["run", "sensed", "--replan"], "run without a plan"),
    (["run", "sensed", "--provenance", "--why", "-1"], "--why must be a row number"),
    (["run", "sensed", "--provenance", "--why", "9", "--engine", "duckdb"], "no row 9"),
    (["register", "sizes", "--sql", "SELECT r.region FROM region_sizes r", "--provenance"],
     "cannot keep provenance: view region_sizes stores no formula"),
    (["register", "clash", "--sql", "SELECT a.src AS provenance FROM link a", "--provenance"],
     "a column named 'provenance' already"),
])
def test_wrong_use_is_one_line(lake, capsys, argv, fragment) -> None:
    assert _aspen(lake, "query", *argv) == 2
    err = capsys.readouterr().err
    assert fragment in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_registry_written_before_the_column_still_reads(tmp_path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    lake = Settings(lake=str(tmp_path / "lake"))
    stamp = pa.timestamp("us", "UTC")
    old = pa.schema([("name", pa.string()), ("sql", pa.string()), ("registered_at", stamp),
                     ("query_json", pa.string()), ("spec_json", pa.string()),
                     ("plan_json", pa.string()), ("plan_cost", pa.float64()),
                     ("optimizer", pa.string()), ("planned_at", stamp),
                     ("stats_json", pa.string())])
    row = {"name": "old", "sql": "SELECT a.src FROM link a",
           "registered_at": datetime(2026, 1, 1, tzinfo=UTC), "query_json": "{}",
           "spec_json": "{}", "plan_json": '{"scan": "a"}', "plan_cost": 2.5,
           "optimizer": "dpsize", "planned_at": datetime(2026, 1, 2, tzinfo=UTC),
           "stats_json": "{}"}
    write_deltalake(lake.table_uri(QUERIES_TABLE), pa.Table.from_pylist([row], schema=old))
    entry = get_query(lake, "old")
    assert entry.provenance is False and entry.plan == {"scan": "a"} and entry.plan_cost == 2.5
    register(lake, "new", "SELECT a.src FROM link a", provenance=True)  # rewrites with it
    assert [(q.name, q.provenance, q.plan_cost) for q in list_queries(lake)] == [
        ("new", True, None), ("old", False, 2.5)]
