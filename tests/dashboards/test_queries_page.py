"""AppTest of the Queries page: the registered continuous queries, the path each takes after a
batch (incremental, or recomputed and why), the cost of its last batches, the current plan as
a tree with estimated and observed rows, the last run per operator, and the plan history (old
→ new plan, the statistics that moved).

The lake is written with delta-rs only (no Spark): queries registered and planned by the
optimizer from literal statistics, runs appended as ``query_runs`` rows built from the plan's
nodes with observed rows chosen here, ``query_batches`` rows as the query worker appends them,
and ``plans`` rows of three plan changes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dashboard_apptest import open_page
from streamlit.testing.v1 import AppTest
from test_dashboard_hostile_ids import BOLD, LINK, MATH, TAG, TICK, _in_code, _inert

from aspen.lake.deltars import read_table, write_table
from aspen.optimizer.stats import Stats
from aspen.queries.batch_costs import BatchCost, append_batch_costs
from aspen.queries.planner import choose_plan, plan_nodes
from aspen.queries.plans import PlanChange, append_change
from aspen.queries.registry import get_query, register, store_plan
from aspen.queries.runs import RunRow, append_runs
from aspen.queries.status import QueryStatus, record_statuses
from aspen.settings import Settings

QUERIES = "pages/queries.py"
HOT_SQL = ("SELECT a.src, COUNT(*) AS n FROM link a JOIN link b ON a.dst = b.src "
           "WHERE b.cost > 1 GROUP BY a.src")
#: link: 240 rows, 60 distinct sources and destinations; b's filter keeps the default 10 %.
STATS = {"tables": {"link": {"rows": 240, "columns": {"src": {"ndv": 60}, "dst": {"ndv": 60}}}}}
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
#: Observed rows of the last run of ``hot``, by node (estimates: a 240, b 24, the join 96).
OBSERVED = {"root.L": 240, "root.R": 30, "root": 4800}
#: A plan of the two relations other than the one the optimizer picks.
EARLIER_PLAN = {"join": "sort_merge", "left": {"scan": "b"}, "right": {"scan": "a"}}


def plan(settings: Settings, name: str, optimizer: str = "exhaustive") -> dict[str, Any]:
    """Plan ``name`` under :data:`STATS` and store the plan, as ``aspen query plan`` would."""
    parsed = get_query(settings, name).parsed()
    cost, tree = choose_plan(parsed.query, Stats.from_json(STATS))
    store_plan(settings, name, tree, cost, STATS, optimizer)
    return tree


def run(settings: Settings, name: str, tree: dict[str, Any], started: datetime,
        observed: dict[str, int], executed: dict[str, str], run_id: str) -> None:
    """Append one run of ``name`` executing ``tree``: a row per node, as a run records it
    (every operator the planned one)."""
    parsed = get_query(settings, name).parsed()
    stats = Stats.from_json(STATS)
    rows = []
    for node in plan_nodes(tree, parsed.query, stats):
        join = node.operator != "scan"
        ran = executed.get(node.path, "scan")
        rows.append(RunRow(
            name, run_id, 7, started, 3.5, 42, json.dumps(tree), 0.5, '{"link": 3}', node.path,
            ",".join(sorted(node.aliases)), node.operator, ran, True, node.estimated_rows,
            observed[node.path],
            observed[f"{node.path}.L"] if join else None,
            observed[f"{node.path}.R"] if join else None))
    append_runs(settings, rows)


def change(name: str, minutes: int, method: str, reason: str, old: float | None, new: float,
           changes: list[dict[str, Any]]) -> PlanChange:
    """A ``plans`` row of ``name``, ``minutes`` after :data:`START`."""
    return PlanChange(name, START + timedelta(minutes=minutes), method, reason,
                      None if old is None else json.dumps(EARLIER_PLAN), json.dumps({"scan": "a"}),
                      old, new, json.dumps(changes), '{"link": 3}', 0.01, "{}")


@pytest.fixture(scope="module")
def queries_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``hot`` (planned, ran twice, three plan changes), ``cold`` (registered only) and
    ``replanned`` (its last run executed an earlier plan)."""
    root = tmp_path_factory.mktemp("queries") / "lake"
    settings = Settings(lake=str(root))
    register(settings, "hot", HOT_SQL)
    register(settings, "cold", "SELECT COUNT(*) AS n FROM link")
    register(settings, "replanned", HOT_SQL.replace("COUNT(*)", "SUM(b.cost)"))
    hot = plan(settings, "hot")
    plan(settings, "replanned", optimizer="declarative")
    joins = {"root": "BroadcastHashJoin(BuildRight)"}
    run(settings, "hot", hot, START, {"root.L": 1, "root.R": 1, "root": 1}, joins, "older")
    run(settings, "hot", hot, START + timedelta(hours=1), OBSERVED, joins, "latest")
    run(settings, "replanned", EARLIER_PLAN, START, {"root.L": 30, "root.R": 240, "root": 4800},
        {"root": "SortMergeJoin"}, "earlier")
    append_change(settings, change("hot", 0, "exhaustive", "initial", None, 2.5, []))
    append_change(settings, change("hot", 30, "declarative", "statistics", 40.0, 12.5, [
        {"kind": "rows", "name": "link", "old": 240.0, "new": 4800.0},
        {"kind": "selectivity", "name": "b: cost > 1", "old": None, "new": 0.125}]))
    append_change(settings, change("hot", 90, "exhaustive", "planned", 7.0, 3.25, []))
    append_change(settings, change("replanned", 5, "declarative", "initial", None, 1.0, []))
    append_batch_costs(settings, [
        BatchCost("hot", 5, "incremental", "built", 0.25, 42, None, 300, START),
        BatchCost("hot", 6, "incremental", "incremental", 0.04, 3, None, 301,
                  START + timedelta(minutes=1)),
        BatchCost("hot", 7, "incremental", "incremental", 0.05, 2, None, 302,
                  START + timedelta(minutes=2)),
        BatchCost("replanned", 8, "failed", None, 120.0, None, None, None, START)])
    record_statuses(settings, [
        QueryStatus("hot", "ok", None, 7, "latest", START, 3.5),
        QueryStatus("replanned", "timed out", "cancelled after 120 s (the time limit)", 8, None,
                    START, 120.0)])
    return root


@pytest.fixture
def queries_lake(queries_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """:func:`queries_root` as the lake the dashboard reads."""
    monkeypatch.setenv("ASPEN_LAKE", str(queries_root))
    return queries_root


def _frame(app: AppTest, column: str) -> pd.DataFrame:
    """The first table on the page with a column ``column``."""
    for element in app.dataframe:
        if column in element.value.columns:
            return element.value
    raise AssertionError(f"no table with a column {column!r}")


def _dot(app: AppTest) -> str:
    """The DOT source of the page's one Graphviz chart."""
    (chart,) = app.get("graphviz_chart")
    return str(chart.proto.spec)


def test_the_page_lists_the_queries_and_draws_the_current_plan(queries_lake: Path) -> None:
    app = open_page(QUERIES)
    assert app.title[0].value == "Queries"
    listed = _frame(app, "optimizer")
    assert listed["name"].tolist() == ["cold", "hot", "replanned"]
    assert listed["optimizer"].tolist() == ["", "exhaustive", "declarative"]
    assert listed["runs"].tolist() == [0, 2, 1]
    assert listed["last run"].tolist() == ["–", "2026-03-01 13:00:00", "2026-03-01 12:00:00"]
    assert listed["sql"].tolist()[1] == HOT_SQL
    assert listed["cost"].notna().tolist() == [False, True, True]
    assert app.selectbox(key="query_name").options == ["cold", "hot", "replanned"]

    app.selectbox(key="query_name").select("hot").run()
    assert not app.exception, app.exception
    assert app.header[0].value == "Query `hot`"
    assert app.code[0].value == HOT_SQL
    assert any("Chosen by `exhaustive`" in c.value for c in app.caption)
    dot = _dot(app)
    assert ('"root" [label="broadcast_hash\\nestimated 96 rows\\nobserved 4,800 rows (×50)\\n'
            'ran BroadcastHashJoin(BuildRight) ✓"') in dot
    assert '"root.L" [label="scan a (link)\\nestimated 240 rows\\nobserved 240 rows (×1)"' in dot
    assert '"root.R" [label="scan b (link)\\nestimated 24 rows\\nobserved 30 rows (×1.25)"' in dot
    assert '"root" -> "root.R" [label="right (build)"];' in dot

    metrics = {m.label: m.value for m in app.metric}
    assert metrics == {"Wall time": "3.50 s", "Result rows": "42", "Joins run as planned": "1 of 1",
                       "Last batch": "7", "Its seconds": "0.050 s", "Result rows changed": "2"}
    assert [s.value for s in app.success] == [
        "Path: `maintained incrementally after every batch (state + merge, in process)`."]
    costs = _frame(app, "rows changed")
    assert costs["batch"].tolist() == [5, 6, 7]
    assert costs["step"].tolist() == ["built", "incremental", "incremental"]
    assert costs["seconds"].tolist() == [0.25, 0.04, 0.05]
    assert costs["rows changed"].tolist() == [42, 3, 2]
    assert costs["state rows"].tolist() == [300, 301, 302]
    assert costs["result rows"].isna().all()
    assert "Started 2026-03-01 13:00:00 UTC, after maintained batch 7." in [
        c.value for c in app.caption]
    per_operator = _frame(app, "observed / estimated").set_index("node")
    assert per_operator.index.tolist() == ["root", "root.L", "root.R"]  # the latest run only
    assert per_operator["operator"].tolist() == ["broadcast_hash", "scan a (link)",
                                                 "scan b (link)"]
    assert per_operator["estimated rows"].tolist() == [96.0, 240.0, 24.0]
    assert per_operator["observed rows"].tolist() == [4800, 240, 30]
    assert per_operator["observed / estimated"].tolist() == [50.0, 1.0, 1.25]
    assert per_operator.loc["root", ["left rows", "right rows"]].tolist() == [240, 30]
    assert per_operator.loc["root", "matches"]

    history = _frame(app, "reason")
    moved = "(b sort_merge a) → a"
    assert history.values.tolist() == [
        ["2026-03-01 13:30:00", "planned", "exhaustive", moved, "7 → 3.25", ""],
        ["2026-03-01 12:30:00", "statistics", "declarative", moved, "40 → 12.5",
         "rows of link 240 → 4,800; selectivity of b: cost > 1 none → 0.125"],
        ["2026-03-01 12:00:00", "initial", "exhaustive", "– → a", "– → 2.5", ""],
    ]
    assert not app.info and not app.warning


def test_a_query_never_planned_nor_run_says_so(queries_lake: Path) -> None:
    app = open_page(QUERIES)  # `cold` comes first
    assert app.header[0].value == "Query `cold`"
    assert app.code[0].value == "SELECT COUNT(*) AS n FROM link"
    assert [i.value for i in app.info] == [
        "No batch cost recorded for `cold`: the query worker records one row per query after "
        "every maintained batch.",
        "`cold` has not been planned yet: `aspen query plan cold` plans it (a run plans it too).",
        "`cold` has never run: `aspen query run cold` runs it.",
        "No plan change recorded for `cold` (the `plans` table gets a row each time a "
        "query's plan changes).",
    ]
    assert not app.get("graphviz_chart") and not app.metric


def test_a_run_of_an_earlier_plan_shows_its_rows_by_relations(queries_lake: Path) -> None:
    app = open_page(QUERIES)
    app.selectbox(key="query_name").select("replanned").run()
    assert not app.exception, app.exception
    dot = _dot(app)
    assert '"root" [label="broadcast_hash\\nestimated 96 rows\\nobserved 4,800 rows (×50)"' in dot
    assert "✓" not in dot and "✗" not in dot  # another plan ran: its operators are not compared
    assert any("executed an earlier plan" in c.value for c in app.caption)
    per_operator = _frame(app, "observed / estimated")
    assert per_operator["operator"].tolist() == ["sort_merge", "scan b (link)", "scan a (link)"]
    assert per_operator["executed"].tolist()[0] == "SortMergeJoin"
    assert _frame(app, "reason")["reason"].tolist() == ["initial"]


def test_a_query_cancelled_by_its_time_limit_says_so(queries_lake: Path) -> None:
    app = open_page(QUERIES)
    assert _frame(app, "last outcome")["last outcome"].tolist() == [
        "–", "ok after batch 7", "timed out after batch 8: cancelled after 120 s (the time limit)"]
    app.selectbox(key="query_name").select("replanned").run()
    assert not app.exception, app.exception
    assert [e.value for e in app.error] == [
        "Last outcome (2026-03-01 12:00:00 UTC): `timed out after batch 8: cancelled after 120 s "
        "(the time limit)`"]


def test_the_page_on_an_empty_lake_says_there_are_no_queries(empty_lake: Path) -> None:
    app = open_page(QUERIES)
    assert not app.exception and not app.warning
    (message,) = [i.value for i in app.info]
    assert message.startswith("No continuous queries yet: there is no `queries` table.")
    assert not app.dataframe and not app.selectbox


@pytest.fixture
def hostile_queries_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A query named :data:`LINK` (written past the registry's check of names), whose SQL holds
    Markdown and HTML in a string literal, planned by an optimizer named :data:`TICK`, run once,
    with a plan change caused by a statistic named after its filter."""
    root = tmp_path / "hostile-queries"
    settings = Settings(lake=str(root))
    sql = (f"SELECT a.src FROM link a JOIN link b ON a.dst = b.src "
           f"WHERE b.src = '{TAG} {BOLD} {MATH}'")
    register(settings, "hostile", sql)
    tree = plan(settings, "hostile", optimizer=TICK)
    run(settings, "hostile", tree, START, OBSERVED, {"root": "BroadcastHashJoin(BuildRight)"},
        "r1")
    registry = read_table(settings, "queries").assign(name=LINK)
    write_table(settings, "queries", registry)
    runs = read_table(settings, "query_runs").assign(query=LINK)
    write_table(settings, "query_runs", runs)
    filter_name = f"b: src = '{TAG} {BOLD} {MATH}'"
    append_change(settings, change(LINK, 0, "exhaustive", "statistics", 2.0, 1.0, [
        {"kind": "selectivity", "name": filter_name, "old": 0.5, "new": 0.25}]))
    monkeypatch.setenv("ASPEN_LAKE", str(root))
    return root


def test_hostile_names_sql_and_statistics_are_shown_as_text(hostile_queries_lake: Path) -> None:
    app = open_page(QUERIES)
    page_html = _inert(app)
    assert app.selectbox(key="query_name").options == [LINK]
    assert _in_code(page_html, LINK)  # the heading's name
    assert _in_code(page_html, TICK)  # the optimizer, in the plan's caption
    assert TAG in app.code[0].value and BOLD in app.code[0].value  # SQL as code, not Markdown
    (moved,) = _frame(app, "reason")["statistics that moved"]
    assert moved == f"selectivity of b: src = '{TAG} {BOLD} {MATH}' 0.5 → 0.25"
    assert _frame(app, "optimizer")["name"].tolist() == [LINK]
    assert "observed 4,800 rows" in _dot(app)  # the run, found under the hostile name


def test_a_recomputed_query_says_why_and_shows_what_its_batches_cost(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(lake=str(tmp_path / "lake"))
    sql = "SELECT year(first_inserted_at) AS y, COUNT(*) AS n FROM link GROUP BY y"
    register(settings, "dated", sql)
    append_batch_costs(settings, [
        BatchCost("dated", b, "recomputed", None, 20.0 + b, None, 10 * b, None,
                  START + timedelta(minutes=b)) for b in (1, 2)])
    monkeypatch.setenv("ASPEN_LAKE", str(settings.lake))
    app = open_page(QUERIES)
    assert not app.exception, app.exception
    assert [w.value for w in app.warning] == [
        "Path: `recomputed on Spark after every batch: Year is not maintained "
        "incrementally`."]
    costs = _frame(app, "rows changed")
    assert costs["path"].tolist() == ["recomputed", "recomputed"]
    assert costs["result rows"].tolist() == [10, 20]
    assert costs["rows changed"].isna().all()
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Last batch"] == "2" and metrics["Result rows changed"] == "–"
    assert app.get("arrow_vega_lite_chart") or app.get("vega_lite_chart")
