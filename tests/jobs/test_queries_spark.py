"""Continuous queries on Spark (aspen.queries): each query run under every join method and two
join orders gives DuckDB's answer to the same SQL over the same rows; Spark runs exactly the
planned join operators, and the rows each operator reports are the rows DuckDB counts for that
sub-join. Then the optimizer's path: statistics → plan → run → observed selectivities, and the
CLI."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable

import duckdb
import pandas as pd
import pytest
import sqlglot

from aspen.cli.main import main
from aspen.lake.deltars import read_table, write_table
from aspen.optimizer.stats import Stats
from aspen.queries.execute import execute
from aspen.queries.incremental.maintain import IncrementalReport
from aspen.queries.physical import EXPECTED_OPERATORS
from aspen.queries.registry import get_query, register
from aspen.queries.runner import plan_query, run_registered
from aspen.queries.spec import ParsedQuery

pytestmark = [pytest.mark.spark, pytest.mark.slow]

NODES = [f"n{i}" for i in range(25)]

THREE_WAY = ("SELECT a.src, b.dst, a.cost + b.cost AS total, s.x FROM link a, link b, sensor s "
             "WHERE a.dst = b.src AND b.dst = s.id AND a.cost > 2 AND s.y < 2")
GROUPED = ("SELECT a.src, COUNT(*) AS n, SUM(b.cost) AS total, MIN(b.dst) AS first, "
           "MAX(a.cost) AS most, AVG(b.cost) AS mean FROM link a JOIN link b ON a.dst = b.src "
           "WHERE b.cost <= 6 OR b.cost IS NULL GROUP BY a.src")
ON_A_VIEW = ("SELECT DISTINCT m.src, m.dst, l.cost FROM min_cost m JOIN link l "
             "ON l.src = m.src AND l.dst = m.dst WHERE m.cost < 5")


@pytest.fixture(scope="module")
def query_lake(tmp_path_factory):
    """A small lake written directly: link (one cost null), sensor (one y null), the view
    min_cost; the three queries registered."""
    from aspen.settings import Settings

    lake = Settings(lake=str(tmp_path_factory.mktemp("queries") / "lake"))
    rng = random.Random(7)
    links = sorted({(a, b) for a, b in (rng.sample(NODES, 2) for _ in range(110))})
    costs = [float(rng.randint(1, 9)) for _ in links]
    costs[3] = None
    write_table(lake, "link", pd.DataFrame({
        "src": [a for a, _ in links], "dst": [b for _, b in links], "cost": costs,
        "batch_id": [1] * len(links)}))
    write_table(lake, "sensor", pd.DataFrame({
        "id": NODES, "x": [float(i) for i in range(len(NODES))],
        "y": [None] + [float(i % 3) for i in range(1, len(NODES))]}))
    pairs = {(a, b) for a, b in (rng.sample(NODES, 2) for _ in range(60))}
    cheapest = sorted(pairs | set(links[:20]))
    write_table(lake, "min_cost", pd.DataFrame({
        "src": [a for a, _ in cheapest], "dst": [b for _, b in cheapest],
        "cost": [float(rng.randint(1, 9)) for _ in cheapest], "batch_id": [1] * len(cheapest)}))
    for name, sql in (("three", THREE_WAY), ("grouped", GROUPED), ("on_view", ON_A_VIEW)):
        register(lake, name, sql)
    return lake


def _normal(rows: Iterable[Iterable]) -> list[tuple]:
    """Rows comparable across engines: floats rounded, NaN as None, sorted."""
    def cell(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        return round(float(v), 9) if isinstance(v, float | int) and not isinstance(v, bool) else v

    return sorted((tuple(cell(v) for v in row) for row in rows), key=repr)


def _duckdb(lake, sql: str, tables: Iterable[str]) -> list[tuple]:
    con = duckdb.connect()
    for table in tables:
        con.register(table, read_table(lake, table))
    return con.execute(sqlglot.transpile(sql, read="spark", write="duckdb")[0]).fetchall()


def _duckdb_count(lake, parsed: ParsedQuery, aliases: Iterable[str]) -> int:
    """What DuckDB counts for the sub-join of ``aliases`` (their filters applied)."""
    aliases = sorted(aliases)
    query = parsed.query
    sources = []
    for alias in aliases:
        where = " AND ".join(f"({f.predicate})" for f in query.filters_of(alias)) or "TRUE"
        sources.append(f"(SELECT * FROM {query.relations[alias]} WHERE {where}) AS {alias}")
    joins = " AND ".join(f"{p.left} = {p.right}" for p in query.joins_within(aliases)) or "TRUE"
    sql = f"SELECT COUNT(*) FROM {', '.join(sources)} WHERE {joins}"
    return int(_duckdb(lake, sql, parsed.tables)[0][0])


def _result(lake, name: str) -> list[tuple]:
    frame = read_table(lake, f"q_{name}")
    return _normal(frame.astype(object).where(frame.notna(), None).itertuples(index=False))


def _join(method: str, left: dict, right: dict) -> dict:
    return {"join": method, "left": left, "right": right}


A, B, S = {"scan": "a"}, {"scan": "b"}, {"scan": "s"}
BH, SH, SM = "broadcast_hash", "shuffle_hash", "sort_merge"
#: Per query, plans that together use every join method at every join and two join orders.
PLANS = {
    "three": [_join(SH, _join(BH, A, B), S), _join(BH, _join(SM, S, B), A),
              _join(SM, _join(SH, A, B), S)],
    "grouped": [_join(BH, A, B), _join(SH, B, A), _join(SM, A, B)],
}


def _operator(method: str) -> str:
    name, build = EXPECTED_OPERATORS[method]
    return f"{name}({build})" if build else name


@pytest.mark.parametrize("name", ["three", "grouped"])
def test_every_method_and_order_gives_duckdbs_answer(spark, query_lake, name) -> None:
    parsed = get_query(query_lake, name).parsed()
    expected = _normal(_duckdb(query_lake, parsed.sql, parsed.tables))
    assert expected  # the lake is built so every query has rows
    counts: dict[frozenset[str], int] = {}
    for plan in PLANS[name]:
        report = execute(spark, query_lake, parsed, plan, Stats())
        assert _result(query_lake, name) == expected, plan
        assert report.result_rows == len(expected)
        assert report.matches, plan
        for node in report.nodes:
            if node.operator != "scan":
                assert node.executed == _operator(node.operator), (plan, node)
            aliases = frozenset(node.relations.split(","))
            if aliases not in counts:
                counts[aliases] = _duckdb_count(query_lake, parsed, aliases)
            assert node.observed_rows == counts[aliases], (plan, node)


def test_plan_run_and_observed_selectivities(spark, query_lake) -> None:
    planned = plan_query(spark, query_lake, "three")
    document = planned.document
    assert document["tables"]["link"]["rows"] == len(read_table(query_lake, "link"))
    assert document["tables"]["link"]["columns"]["dst"]["ndv"] > 10
    assert document["selectivity"]["a: cost > 2"] == pytest.approx(
        _duckdb_count(query_lake, planned.parsed, "a") / document["tables"]["link"]["rows"])
    stored = get_query(query_lake, "three")
    assert stored.plan == planned.plan and stored.plan_cost == pytest.approx(planned.cost)

    outcomes = {o.name: o for o in run_registered(spark, query_lake, batch_id=3,
                                                  incremental=False)}
    assert sorted(outcomes) == ["grouped", "on_view", "three"]
    for name, outcome in outcomes.items():
        assert outcome.error is None and outcome.report is not None and outcome.report.matches
        parsed = get_query(query_lake, name).parsed()
        assert _result(query_lake, name) == _normal(
            _duckdb(query_lake, parsed.sql, parsed.tables)), name
    runs = read_table(query_lake, "query_runs")
    assert set(runs[runs["batch_id"] == 3]["query"]) == {"grouped", "on_view", "three"}

    replanned = plan_query(spark, query_lake, "three")
    assert replanned.document["observed_run"] == outcomes["three"].report.run_id
    assert {"a.dst=b.src", "b.dst=s.id"} <= set(replanned.document["selectivity"])


def test_the_cli_plans_and_runs(spark, query_lake, monkeypatch, capsys) -> None:
    import aspen.spark.session

    monkeypatch.setattr(aspen.spark.session, "get_spark", lambda *a, **k: spark)
    assert main(["--lake", query_lake.lake, "query", "plan", "grouped", "--method", "volcano"]) == 0
    out = capsys.readouterr().out
    assert "plan of cost" in out and "scan a (link)" in out and "rows" in out
    assert main(["--lake", query_lake.lake, "query", "run", "grouped"]) == 0
    out = capsys.readouterr().out
    assert "rows into q_grouped" in out and "observed_rows" in out and "warning" not in out
    assert main(["--lake", query_lake.lake, "query", "show", "grouped"]) == 0
    assert "plan (volcano, cost" in capsys.readouterr().out


def test_reoptimization_adopts_a_plan_after_the_data_drifted(spark, tmp_path, monkeypatch,
                                                             capsys) -> None:
    """Statistics from the lake → incremental re-optimization from the saved state (the CLI, as
    the DAG's job runs it) → a new plan recorded in ``plans`` → the run after the next batch
    adopts it (and equals DuckDB)."""
    import aspen.spark.session
    from aspen.optimizer.brute import best_by_brute_force
    from aspen.queries.plans import plan_history
    from aspen.queries.reoptimize import reoptimize_query
    from aspen.queries.runner import run_after_batch
    from aspen.settings import Settings

    monkeypatch.setattr(aspen.spark.session, "get_spark", lambda *a, **k: spark)
    lake = Settings(lake=str(tmp_path / "lake"))
    sql = "SELECT a.src, s.x FROM link a JOIN sensor s ON a.dst = s.id"

    def write(links: int, sensors: int) -> None:
        write_table(lake, "link", pd.DataFrame({
            "src": [f"n{i}" for i in range(links)], "dst": [f"n{i % 50}" for i in range(links)],
            "cost": [1.0] * links, "batch_id": [1] * links}))
        write_table(lake, "sensor", pd.DataFrame({
            "id": [f"n{i}" for i in range(sensors)], "x": [float(i) for i in range(sensors)],
            "y": [0.0] * sensors}))

    write(links=3000, sensors=5)
    register(lake, "drift", sql)
    first = reoptimize_query(spark, lake, "drift")
    assert first.start == "from scratch: no saved state"
    write(links=5, sensors=3000)  # the build side must flip
    assert main(["--lake", lake.lake, "query", "reoptimize", "drift"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("drift: declarative (incremental), ") and "plan changed" in out
    assert "rows of link 3,000 → 5" in out and "rows of sensor 5 → 3,000" in out
    entry = get_query(lake, "drift")
    assert entry.plan != first.new_plan
    parsed, stats = entry.parsed(), Stats.from_json(entry.stats)
    assert entry.plan_cost == pytest.approx(best_by_brute_force(parsed.query, stats)[0])
    history = plan_history(lake, "drift")
    assert [c.reason for c in history] == ["initial", "statistics"]
    assert json.loads(history[-1].new_plan) == entry.plan

    lines = run_after_batch(lake, batch_id=9)
    assert len(lines) == 1 and "rows into q_drift" in lines[0] and "not every" not in lines[0]
    assert _result(lake, "drift") == _normal(_duckdb(lake, sql, parsed.tables))
    runs = read_table(lake, "query_runs")
    assert json.loads(runs[runs["batch_id"] == 9]["plan"].iloc[0]) == entry.plan


def test_base_tables_are_read_one_row_per_live_tuple(spark, tmp_path) -> None:
    """A lake built by ingest, apply and the TTL sweep (in process), with a link renewed then
    replaced, one inserted without a TTL then renewed with one, a renewed sensor, a deleted and
    an expired link: every query over ``link`` and ``sensor`` — rows, counts, a self-join, the
    bookkeeping — sees one row per live tuple with its current values, as an oracle over the
    ingested records says; the statistics count those tuples too."""
    from datetime import UTC, datetime, timedelta

    from aspen.lake.apply_local import apply_in_process
    from aspen.lake.expire_local import expire_in_process
    from aspen.lake.ingest import ingest_files
    from aspen.pipeline.maintain_local import maintain_local
    from aspen.queries.stats import lake_stats
    from aspen.settings import Settings

    at = datetime(2026, 1, 1, tzinfo=UTC)
    swept = at + timedelta(minutes=30)

    def link(op: str, src: str, dst: str, cost: float | None = None, ttl: int | None = None,
             minute: int = 0) -> dict:
        record = {"op": op, "relation": "link", "src": src, "dst": dst,
                  "event_time": (at + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%S")}
        return record | ({} if cost is None else {"cost": cost}) | (
            {} if ttl is None else {"ttl_s": ttl})

    sensor = {"op": "insert", "relation": "sensor", "id": "s1", "x": 1.0, "y": 2.0}
    batches = [
        [link("insert", "a", "b", 1.0), link("insert", "b", "c", 2.0),
         link("insert", "c", "d", 3.0), link("insert", "d", "e", 4.0, ttl=60),
         link("insert", "e", "f", 5.0), link("insert", "f", "a", 6.0, ttl=86400),
         link("insert", "b", "a", 8.0), sensor],
        [link("insert", "a", "b", 1.0, minute=1), link("insert", "b", "c", 2.0, ttl=86400,
                                                       minute=1),
         link("delete", "c", "d", minute=1), link("insert", "b", "a", 8.0, minute=1), sensor],
        [link("insert", "a", "b", 9.0, minute=2)],
    ]
    lake = Settings(lake=str(tmp_path / "lake"))
    for number, records in enumerate(batches):
        path = tmp_path / f"updates{number}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        ingest_files(lake, [path])
        apply_in_process(lake)
    expire_in_process(lake, now=swept)
    maintain_local(lake)  # maintained batch 1: what the incremental path reads changes against

    # the oracle, from the records alone: per key its live instances (cost, expiry)
    live: dict[tuple[str, str], list[tuple[float, datetime | None]]] = {}
    for record in (r for records in batches for r in records if r["relation"] == "link"):
        key = (record["src"], record["dst"])
        if record["op"] == "delete" or (key in live and live[key][0][0] != record["cost"]):
            live.pop(key, None)
        if record["op"] == "insert":
            born = datetime.fromisoformat(record["event_time"]).replace(tzinfo=UTC)
            ttl = record.get("ttl_s")
            live.setdefault(key, []).append(
                (record["cost"], None if ttl is None else born + timedelta(seconds=ttl)))
    live = {k: [i for i in v if i[1] is None or i[1] > swept] for k, v in live.items()}
    live = {k: v for k, v in live.items() if v}
    instances = sum(len(v) for v in live.values())
    assert len(read_table(lake, "link")) == instances > len(live)  # renewals are stored rows

    queries = {
        "links": "SELECT a.src, a.dst, a.cost FROM link a",
        "counted": "SELECT COUNT(*) AS n FROM link a",
        "kept": "SELECT a.src, a.dst, a.instances, a.expires_at FROM link a",
        "onward": "SELECT a.src, COUNT(*) AS n FROM link a JOIN link b ON a.dst = b.src "
                  "GROUP BY a.src",
        "sensors": "SELECT COUNT(*) AS n, MAX(s.instances) AS most FROM sensor s",
    }
    for name, sql in queries.items():
        register(lake, name, sql)
    outcomes = {o.name: o for o in run_registered(spark, lake, batch_id=1, incremental=False)}
    assert all(o.error is None for o in outcomes.values()), outcomes
    recomputed = {name: _result(lake, name) for name in queries}
    # the same round maintained by state + merge, in process: the same tables
    again = {o.name: o for o in run_registered(spark, lake, batch_id=1)}
    assert all(isinstance(o.report, IncrementalReport) for o in again.values()), again
    assert {name: _result(lake, name) for name in queries} == recomputed

    assert _result(lake, "links") == _normal((s, d, v[0][0]) for (s, d), v in live.items())
    assert _result(lake, "links") == _normal([("a", "b", 9.0), ("b", "a", 8.0), ("b", "c", 2.0),
                                              ("e", "f", 5.0), ("f", "a", 6.0)])
    assert _result(lake, "counted") == [(len(live),)]
    scans = [n for o in outcomes.values() for n in o.report.nodes if n.operator == "scan"]
    assert [n.observed_rows for n in outcomes["links"].report.nodes] == [len(live)]
    assert all(n.observed_rows is not None for n in scans)  # seen through the grouping
    onward = {}
    for src, dst in live:
        onward[src] = onward.get(src, 0) + sum(1 for s, _ in live if s == dst)
    assert _result(lake, "onward") == _normal((s, n) for s, n in onward.items() if n)
    assert _result(lake, "sensors") == [(1, 2)]

    kept = read_table(lake, "q_kept")
    def utc(value) -> datetime | None:
        if pd.isna(value):
            return None
        stamp = pd.Timestamp(value)
        return stamp.tz_localize(UTC) if stamp.tzinfo is None else stamp.tz_convert(UTC)

    got = {(r.src, r.dst): (int(r.instances), utc(r.expires_at)) for r in kept.itertuples()}
    expected = {k: (len(v), None if any(e is None for _, e in v) else max(e for _, e in v))
                for k, v in live.items()}
    assert got == expected
    assert got[("b", "c")] == (2, None)  # no TTL, renewed with one: never expires
    assert got[("f", "a")] == (1, at + timedelta(days=1))

    found = lake_stats(spark, lake, get_query(lake, "kept").parsed())
    assert found.stats.rows("link") == len(live)
    assert found.document["tables"]["link"]["log_rows"] == instances
