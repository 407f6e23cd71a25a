"""Re-optimization across runs (aspen.queries.reoptimize): the saved optimizer is loaded, only
the statistics that moved are applied, the adopted plan is optimal under the new statistics
(against brute force), and ``plans`` records exactly the changes of plan. Spark-free: the
statistics documents are given."""

from __future__ import annotations

import json
import os
import pickle
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aspen.cli.main import main
from aspen.lake.deltars import write_table
from aspen.optimizer.brute import plans
from aspen.optimizer.cost import cost_of
from aspen.optimizer.query import Query
from aspen.optimizer.stats import Stats
from aspen.queries.keyed_table import read_rows, rewrite
from aspen.queries.optimizer_state import STATE_TABLE, _schema, load_state
from aspen.queries.plans import plan_history
from aspen.queries.registry import drop, get_query, register
from aspen.queries.reoptimize import (
    StatChange,
    due,
    plan_key,
    reoptimize_with,
    stat_changes,
)
from aspen.settings import Settings

SQL = ("SELECT a.src, s.x FROM link a, link b, sensor s, triggered t WHERE a.dst = b.src "
       "AND b.dst = s.id AND t.id = s.id AND a.cost > 2")
JOINS = ("a.dst=b.src", "b.dst=s.id", "s.id=t.id")


def _document(link: float, sensor: float, triggered: float, selectivities: dict[str, float]
              ) -> dict:
    return {"tables": {"link": {"rows": link, "width": 24.0},
                       "sensor": {"rows": sensor, "width": 20.0,
                                  "columns": {"id": {"ndv": sensor}}},
                       "triggered": {"rows": triggered, "width": 8.0}},
            "selectivity": dict(selectivities), "versions": {"link": 3}}


def _brute_best(query: Query, stats: Stats) -> float:
    return min(cost_of(plan, query, stats) for plan in plans(query))


def test_stat_changes_names_exactly_what_moved() -> None:
    old = Stats.from_json(_document(100, 10, 5, {"a.dst=b.src": 0.1}))
    new = Stats.from_json(_document(100, 40, 5, {"a.dst=b.src": 0.1, "b.dst=s.id": 0.5}))
    assert stat_changes(old, new) == [StatChange("ndv", "sensor.id", 10.0, 40.0),
                                      StatChange("rows", "sensor", 10.0, 40.0),
                                      StatChange("selectivity", "b.dst=s.id", None, 0.5)]
    assert stat_changes(new, new) == []
    assert StatChange("rows", "link", 240, 4800).text() == "rows of link 240 → 4,800"


def test_first_plan_then_incremental_adoption(lake: Settings) -> None:
    register(lake, "q", SQL)
    query = Query.from_json(json.loads(get_query(lake, "q").query_json))
    first = reoptimize_with(lake, "q", _document(1e6, 10, 5, {}))
    assert first.start == "from scratch: no saved state" and first.plan_changed
    assert [(c.reason, c.old_plan) for c in plan_history(lake, "q")] == [("initial", None)]
    assert get_query(lake, "q").plan == first.new_plan

    same = reoptimize_with(lake, "q", _document(1e6, 10, 5, {}))
    assert same.start == "incremental" and same.changes == () and not same.plan_changed
    assert len(plan_history(lake, "q")) == 1  # nothing changed: no history row

    # the sensors outgrow the links: the plan must change, and the change is recorded
    drifted = _document(10, 1e6, 5e5, {"b.dst=s.id": 0.9})
    moved = reoptimize_with(lake, "q", drifted)
    stats = Stats.from_json(drifted)
    assert moved.start == "incremental" and moved.plan_changed
    assert moved.new_cost == pytest.approx(_brute_best(query, stats))
    assert moved.old_cost == pytest.approx(cost_of(first.new_plan, query, stats))
    assert moved.old_cost > moved.new_cost
    history = plan_history(lake, "q")
    assert [c.reason for c in history] == ["initial", "statistics"]
    last = history[-1]
    assert json.loads(last.old_plan) == first.new_plan and json.loads(last.new_plan) == \
        moved.new_plan
    assert {(c["kind"], c["name"]) for c in last.change_list} >= {("rows", "link"),
                                                                   ("rows", "sensor")}
    assert get_query(lake, "q").plan == moved.new_plan  # the next run adopts it


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["declarative", "top-down", "bottom-up"]),
       steps=st.lists(st.tuples(
           st.sampled_from([10.0, 1e3, 1e6]), st.sampled_from([10.0, 1e4, 1e6]),
           st.sampled_from([5.0, 1e5]),
           st.dictionaries(st.sampled_from(JOINS), st.sampled_from([1e-6, 1e-3, 0.5]),
                           max_size=3)), min_size=1, max_size=4))
def test_every_run_adopts_an_optimal_plan(tmp_path_factory, method: str, steps) -> None:
    lake = Settings(lake=str(tmp_path_factory.mktemp("reopt") / "lake"))
    register(lake, "q", SQL)
    query = Query.from_json(json.loads(get_query(lake, "q").query_json))
    adopted = None
    changes = 0
    observed: dict[str, float] = {}  # selectivities are cumulative across runs
    for i, (link, sensor, triggered, selectivities) in enumerate(steps):
        outcome = reoptimize_with(lake, "q", _document(link, sensor, triggered, selectivities),
                                  method)
        assert outcome.start == ("incremental" if i else "from scratch: no saved state")
        observed.update(selectivities)
        stats = Stats.from_json(_document(link, sensor, triggered, observed))
        assert outcome.new_cost == pytest.approx(_brute_best(query, stats), rel=1e-9)
        assert cost_of(outcome.new_plan, query, stats) == pytest.approx(outcome.new_cost)
        changes += plan_key(adopted) != plan_key(outcome.new_plan)
        adopted = outcome.new_plan
        assert get_query(lake, "q").plan == adopted
    history = plan_history(lake, "q")
    assert len(history) == changes
    assert json.loads(history[-1].new_plan) == adopted


def test_a_new_method_or_new_sql_starts_from_scratch(lake: Settings) -> None:
    register(lake, "q", SQL)
    reoptimize_with(lake, "q", _document(1e6, 10, 5, {}), "declarative")
    other = reoptimize_with(lake, "q", _document(1e6, 10, 5, {}), "top-down")
    assert other.start == "from scratch: the saved state is of declarative"
    register(lake, "q", "SELECT a.src FROM link a JOIN sensor s ON a.dst = s.id",
             replace_existing=True)
    changed = reoptimize_with(lake, "q", _document(1e6, 10, 5, {}), "top-down")
    assert changed.start == "from scratch: the query changed"
    assert plan_history(lake, "q")[-1].reason in ("initial", "query changed")
    drop(lake, "q")
    assert load_state(lake, "q") is None


def test_a_state_naming_foreign_code_is_never_loaded(lake: Settings, tmp_path) -> None:
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    row = {"query": "q", "method": "declarative", "query_json": "{}", "stats_json": "{}",
           "state": pickle.dumps(Evil()), "format": 1, "saved_at": datetime.now(UTC)}
    rewrite(lake, STATE_TABLE, _schema(), "query", lambda rows: {"q": row})
    assert load_state(lake, "q") is None
    assert not marker.exists()


def test_due_by_schedule_age_and_threshold(lake: Settings) -> None:
    register(lake, "q", SQL)
    assert due(lake) == {"q": "scheduled"}
    assert due(lake, threshold=0.5) == {"q": "never re-optimized"}
    write_table(lake, "link", pd.DataFrame({"src": ["a"] * 100, "dst": ["b"] * 100}))
    reoptimize_with(lake, "q", _document(100, 10, 5, {}))
    assert due(lake, threshold=0.5) == {}
    later = datetime.now(UTC) + timedelta(minutes=15)
    assert due(lake, threshold=0.5, now=later) == {"q": "last re-optimized 15 min ago"}
    write_table(lake, "link", pd.DataFrame({"src": ["a"] * 151, "dst": ["b"] * 151}))
    assert due(lake, threshold=0.5) == {"q": "rows of link moved 51% (100 → 151)"}
    assert due(lake, threshold=0.6) == {}


def test_the_threshold_compares_the_log_with_the_log_count_saved(lake: Settings) -> None:
    """A base table's statistics count its live tuples (40), its Delta log its stored instances
    (100, renewals included): the due check compares the log with the log count saved."""
    register(lake, "q", SQL)
    write_table(lake, "link", pd.DataFrame({"src": ["a"] * 100, "dst": ["b"] * 100}))
    document = _document(40, 10, 5, {})
    document["tables"]["link"]["log_rows"] = 100
    reoptimize_with(lake, "q", document)
    assert json.loads(read_rows(lake, STATE_TABLE, "query")["q"]["stats_json"])[
        "tables"]["link"] == {"rows": 40.0, "width": 24.0, "log_rows": 100}
    assert due(lake, threshold=0.5) == {}
    write_table(lake, "link", pd.DataFrame({"src": ["a"] * 151, "dst": ["b"] * 151}))
    assert due(lake, threshold=0.5) == {"q": "rows of link moved 51% (100 → 151)"}


def test_history_and_reoptimize_on_the_command_line(lake: Settings, capsys) -> None:
    assert main(["--lake", lake.lake, "query", "reoptimize"]) == 0
    assert "no query is registered" in capsys.readouterr().out
    assert main(["--lake", lake.lake, "query", "reoptimize", "nope"]) == 2
    assert "no query 'nope' is registered" in capsys.readouterr().err
    register(lake, "q", SQL)
    reoptimize_with(lake, "q", _document(1e6, 10, 5, {}))
    reoptimize_with(lake, "q", _document(10, 1e6, 5e5, {"b.dst=s.id": 0.9}))
    assert main(["--lake", lake.lake, "query", "history", "q"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "q  initial (declarative): cost - →" in out[0]
    assert any("q  statistics (declarative): cost" in line for line in out)
    assert "    rows of link 1e+06 → 10" in out
    assert main(["--lake", lake.lake, "query", "history", "--format", "json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["reason"] for r in rows] == ["initial", "statistics"]
