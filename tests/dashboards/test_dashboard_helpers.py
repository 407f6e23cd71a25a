"""The dashboard's pure helpers and the ``aspen dashboard`` command (no server is started)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from aspen.cli import dashboard as dashboard_cli
from aspen.cli.main import main

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
sys.path.insert(0, str(DASHBOARDS))
import lakeview  # noqa: E402
import queryview  # noqa: E402


def test_links_dot_quotes_and_escapes_ids() -> None:
    dot = lakeview.links_dot([('a "x"', "b\\c", 2.5), ("b\\c", "d", None)], focus='a "x"')
    assert '"a \\"x\\"" -> "b\\\\c" [label="2.5"];' in dot
    assert '"b\\\\c" -> "d";' in dot  # no cost, no label
    assert '"a \\"x\\"" [style=filled, fillcolor=gold];' in dot
    assert dot.startswith("digraph links {") and dot.endswith("}")


def test_live_edges_keeps_the_cheapest_instance_per_link() -> None:
    frame = pd.DataFrame(
        {"src": ["a", "a", "b", 1], "dst": ["b", "b", "a", 2], "cost": [5.0, 2.0, 1.0, 0.0]}
    )
    edges = lakeview.live_edges(frame)
    assert edges.to_dict("records") == [
        {"src": "1", "dst": "2", "cost": 0.0, "instances": 1},
        {"src": "a", "dst": "b", "cost": 2.0, "instances": 2},
        {"src": "b", "dst": "a", "cost": 1.0, "instances": 1},
    ]
    assert lakeview.live_edges(frame.iloc[:0]).empty


def test_resolve_lake_prefers_args_then_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASPEN_LAKE", "/env/lake")
    assert lakeview.resolve_lake(["--lake", "/arg/lake", "--other"]) == "/arg/lake"
    assert lakeview.resolve_lake([]) == "/env/lake"
    monkeypatch.delenv("ASPEN_LAKE")
    assert lakeview.resolve_lake([]) == "./lakehouse"


def test_dashboard_command_binds_to_localhost_and_passes_the_lake(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    launched: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(dashboard_cli, "serve", lambda cmd, env: launched.append((cmd, env)) or 0)
    code = main(["--lake", str(tmp_path / "lake"), "dashboard", "--port", "8765"])
    assert code == 0
    ((command, env),) = launched
    # the lake reaches the server both ways: after `--`, and in ASPEN_LAKE for every page
    assert env["ASPEN_LAKE"] == (tmp_path / "lake").resolve().as_uri()
    assert command[:3] == [sys.executable, "-m", "aspen.cli.dashboard_server"]
    assert command[3] == str(DASHBOARDS / "app.py")
    separator = command.index("--")
    pairs = command[4:separator]
    options = dict(zip(pairs[::2], pairs[1::2], strict=True))
    assert options == {
        "--server.address": "127.0.0.1",
        "--server.port": "8765",
        "--server.headless": "true",
        "--browser.gatherUsageStats": "false",
    }
    assert command[separator:] == ["--", "--lake", (tmp_path / "lake").resolve().as_uri()]
    assert "http://127.0.0.1:8765" in capsys.readouterr().out


def test_dashboard_command_rejects_a_bad_port(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dashboard", "--port", "70000"]) == 2
    assert "--port must be between 1 and 65535" in capsys.readouterr().err


def test_dashboard_command_without_the_app_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ASPEN_DASHBOARD_APP", str(tmp_path / "nope.py"))
    assert main(["dashboard"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert dashboard_cli.DEFAULT_PORT == 8501


# -- the Queries page's helpers -----------------------------------------------------------------


HELPERS = ["lakeview", "lakewatch", "queryview", "paging", "page_registry", "regionmap", "status",
           "status.words", "status.moments", "status.freshness", "status.latency",
           "status.expectations", "status.quarantine", "status.deaths", "status.light", "topomap",
           "whatif", "status.network", "healthview", "outputnames"]


@pytest.mark.parametrize("name", HELPERS)
def test_the_doctests_of_the_dashboard_helpers_pass(name: str) -> None:
    import doctest
    import importlib

    module = importlib.import_module(name)
    failed, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failed == 0


def _plan_nodes() -> list[object]:
    from aspen.queries.planner import PlanNode

    return [PlanNode("root.L", "scan", frozenset({"a"}), 240.0),
            PlanNode("root.R", "scan", frozenset({"b"}), 24.0),
            PlanNode("root", "sort_merge", frozenset({"a", "b"}), 96.0,
                     frozenset({"a"}), frozenset({"b"}))]


def test_registered_queries_read_missing_values_as_none() -> None:
    frame = pd.DataFrame({
        "name": ["b", "a"], "sql": ["SELECT 2", None], "registered_at": pd.to_datetime(
            ["2026-01-01", "2026-01-02"], utc=True), "query_json": ["{}", "{}"],
        "spec_json": ["{}", "{}"], "plan_json": ['{"scan": "a"}', None],
        "plan_cost": [1.5, float("nan")], "optimizer": ["exhaustive", None],
        "planned_at": pd.to_datetime(["2026-01-03", None], utc=True)})
    first, second = queryview.registered_queries(frame)
    assert (first.name, first.sql, first.plan, first.plan_cost, first.planned_at) == (
        "a", "", None, None, None)
    assert (second.plan, second.plan_cost, second.optimizer) == ({"scan": "a"}, 1.5, "exhaustive")
    assert second.planned_at == pd.Timestamp("2026-01-03", tz="UTC")
    assert queryview.registered_queries(frame.iloc[:0]) == []


def test_query_list_counts_runs_per_query() -> None:
    from aspen.queries.registry import RegisteredQuery

    stamp = pd.Timestamp("2026-01-01T10:00:00Z")
    queries = [RegisteredQuery("cold", "SELECT 1", stamp, "{}", "{}"),
               RegisteredQuery("hot", "SELECT 2", stamp, "{}", "{}", '{"scan": "a"}', 0.5,
                               "volcano", stamp)]
    runs = pd.DataFrame({"query": ["hot", "hot", "other"], "run_id": ["r", "r", "s"],
                         "started_at": [stamp, stamp, stamp + pd.Timedelta(hours=1)]})
    listed = queryview.query_list(queries, runs)
    assert listed.to_dict("records")[1] == {
        "name": "hot", "optimizer": "volcano", "planned at": "2026-01-01 10:00:00",
        "cost": 0.5, "runs": 1, "last run": "2026-01-01 10:00:00", "sql": "SELECT 2"}
    assert listed[["runs", "last run", "optimizer"]].values.tolist()[0] == [0, "–", ""]
    assert queryview.query_list(queries, None)["runs"].tolist() == [0, 0]


def test_latest_run_is_the_last_started_run_by_node_path() -> None:
    runs = pd.DataFrame({
        "query": ["q"] * 5, "run_id": ["old", "new", "new", "new", "old"],
        "started_at": pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-02", "2026-01-02",
                                      "2026-01-01"], utc=True),
        "node": ["root", "root.R", "root", "root.L", "root.L"]})
    latest = queryview.latest_run(runs, "q")
    assert latest[["run_id", "node"]].values.tolist() == [
        ["new", "root"], ["new", "root.L"], ["new", "root.R"]]
    assert queryview.latest_run(runs, "p").empty
    assert queryview.latest_run(pd.DataFrame(), "q").empty


def test_same_plan_and_rows_text() -> None:
    assert queryview.same_plan('{"join": "x", "left": {"scan": "a"}, "right": {"scan": "b"}}',
                              {"right": {"scan": "b"}, "left": {"scan": "a"}, "join": "x"})
    assert not queryview.same_plan('{"scan": "a"}', None)
    assert [queryview.rows_text(v) for v in (0, 0.5, 999.6, 1e6, float("nan"), None)] == [
        "0", "0.5", "1,000", "1,000,000", "–", "–"]


def test_plan_tree_pairs_nodes_by_path_or_by_relations() -> None:
    run = pd.DataFrame({"node": ["root", "root.L", "root.R"], "relations": ["a,b", "b", "a"],
                        "executed": [None, "scan", "scan"], "matches": [False, True, True],
                        "observed_rows": [5000, 30, 240]})
    tree = queryview.plan_tree(_plan_nodes(), {"a": "link", "b": "link"}, run)
    assert tree.columns.tolist() == queryview.PLAN_TREE_COLUMNS
    assert tree.values.tolist() == [
        ["root", "sort_merge", "a,b", 96.0, 5000, None, False],
        ["root.L", "scan a (link)", "a", 240.0, 30, "scan", True],
        ["root.R", "scan b (link)", "b", 24.0, 240, "scan", True]]
    # a run of another plan (b ⋈ a): the same relations observed the same rows
    other = queryview.plan_tree(_plan_nodes(), {}, run, by_path=False)
    assert other["observed rows"].tolist() == [5000, 240, 30]
    assert other["executed"].isna().all() and other["matches"].isna().all()
    alone = queryview.plan_tree(_plan_nodes(), {})
    assert alone["observed rows"].isna().all() and alone["operator"][1] == "scan a"


def test_plan_dot_marks_operators_and_quotes_labels() -> None:
    tree = pd.DataFrame({
        "node": ["root", "root.L", "root.R"],
        "operator": ["sort_merge", 'scan a ("x"\\N)', "scan [b](http://e.example/)"],
        "estimated rows": [96.0, 240.0, 0.0], "observed rows": [5000, None, 3],
        "executed": [None, None, "scan"], "matches": [False, None, True]})
    dot = queryview.plan_dot(tree).splitlines()
    assert dot[2] == ('  "root" [label="sort_merge\\nestimated 96 rows\\nobserved 5,000 rows '
                      '(×52.1)\\nnot found in Spark\'s plan ✗", fillcolor=mistyrose];')
    assert dot[3] == ('  "root.L" [label="scan a (\\"x\\"\\\\N)\\nestimated 240 rows", '
                      "fillcolor=white];")
    assert dot[4] == ('  "root.R" [label="scan [b](http://e.example/)\\nestimated 0 rows\\n'
                      'observed 3 rows", fillcolor=honeydew];')  # no ratio over 0
    assert dot[5:] == ['  "root" -> "root.L" [label="left"];',
                       '  "root" -> "root.R" [label="right"];', "}"]  # a merge has no build side
    mismatch = tree.assign(executed=["ShuffledHashJoin(BuildLeft)", None, "scan"])
    assert "ran ShuffledHashJoin(BuildLeft) ✗" in queryview.plan_dot(mismatch)


def test_run_table_gives_the_ratio_per_operator() -> None:
    run = pd.DataFrame({
        "node": ["root.R", "root", "root.L"], "relations": ["b", "a,b", "a"],
        "operator": ["scan", "broadcast_hash", "scan"],
        "executed": ["scan", "BroadcastHashJoin(BuildRight)", "scan"],
        "matches": [True, True, True], "estimated_rows": [24.0, 96.0, 0.0],
        "observed_rows": [30, 4800, 5], "left_rows": [None, 5, None],
        "right_rows": [None, 30, None]})
    table = queryview.run_table(run, {"a": "link", "b": "sensor"})
    assert table.columns.tolist() == queryview.RUN_TABLE_COLUMNS
    assert table["node"].tolist() == ["root", "root.L", "root.R"]
    assert table["operator"].tolist() == ["broadcast_hash", "scan a (link)", "scan b (sensor)"]
    ratios = table["observed / estimated"].tolist()
    assert ratios[0] == 50.0 and pd.isna(ratios[1]) and ratios[2] == 1.25
    assert table[["left rows", "right rows"]].values.tolist()[0] == [5, 30]


def test_statistic_changes_and_costs_in_words() -> None:
    assert queryview.stat_change_text(
        {"kind": "rows", "name": "link", "old": 240.0, "new": 4800.0}) == "rows of link 240 → 4,800"
    assert queryview.stat_change_text(
        {"kind": "ndv", "name": "link.src", "old": None, "new": 61}) == "ndv of link.src none → 61"
    assert queryview.changes_text(json.dumps([
        {"kind": "width", "name": "link", "old": 24, "new": 28.5},
        {"kind": "selectivity", "name": "a.dst=b.src", "old": 0.01, "new": 0.0125}])) == (
        "width of link 24 → 28.5; selectivity of a.dst=b.src 0.01 → 0.0125")
    assert queryview.changes_text('[{"kind": "rows"}]') == "rows of ? None → None"
    assert queryview.changes_text("[1]") == "(unreadable changes)"
    assert queryview.cost_change_text(40, 12.5) == "40 → 12.5"
    assert queryview.cost_change_text(float("nan"), 0.000213) == "– → 0.000213"


def test_plan_history_rows_are_newest_first() -> None:
    plans = pd.DataFrame({
        "query": ["q", "q", "q", "p"], "changed_at": pd.to_datetime(
            ["2026-01-01", "2026-01-03", "2026-01-02", "2026-01-04"], utc=True),
        "method": ["exhaustive", "exhaustive", "declarative", "volcano"],
        "reason": ["initial", "planned", "statistics", "initial"],
        "old_cost": [None, 7.0, 40.0, None], "new_cost": [2.5, 3.25, 12.5, 1.0],
        "changes": ["[]", "[]", '[{"kind": "rows", "name": "link", "old": 240, "new": 4800}]',
                    "[]"]})
    rows = queryview.plan_history_rows(plans, "q")
    assert rows.columns.tolist() == queryview.PLAN_HISTORY_COLUMNS
    assert rows.values.tolist() == [
        ["2026-01-03 00:00:00", "planned", "exhaustive", "– → –", "7 → 3.25", ""],
        ["2026-01-02 00:00:00", "statistics", "declarative", "– → –", "40 → 12.5",
         "rows of link 240 → 4,800"],
        ["2026-01-01 00:00:00", "initial", "exhaustive", "– → –", "– → 2.5", ""]]
    assert queryview.plan_history_rows(plans, "none").empty
    assert queryview.plan_history_rows(pd.DataFrame(), "q").empty
