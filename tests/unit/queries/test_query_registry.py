"""The query registry (the Delta table ``queries``, delta-rs) and the run history
(``query_runs``): register, replace, plan, drop; concurrent registrations all land."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from aspen.errors import ConfigError
from aspen.lake.deltars import read_table, write_table
from aspen.queries.registry import drop, get_query, list_queries, register, store_plan
from aspen.queries.runs import RunRow, append_runs, last_run
from aspen.queries.stats import observed_selectivities

SQL = "SELECT a.src, COUNT(*) AS n FROM link a JOIN link b ON a.dst = b.src GROUP BY a.src"


def test_register_list_show_and_drop(lake) -> None:
    entry = register(lake, "hot", SQL)
    assert entry.plan is None and entry.stats is None
    assert json.loads(entry.query_json)["joins"] == ["a.dst = b.src"]
    assert [q.name for q in list_queries(lake)] == ["hot"]
    assert get_query(lake, "hot").sql == SQL
    with pytest.raises(ConfigError, match="already registered"):
        register(lake, "hot", "SELECT src FROM link")
    with pytest.raises(ConfigError, match="no query 'cold' is registered"):
        get_query(lake, "cold")
    assert drop(lake, "hot") is False  # it never ran: no result table
    assert list_queries(lake) == []
    with pytest.raises(ConfigError, match=r"registered: none"):
        drop(lake, "hot")


def test_a_bad_query_is_not_registered(lake) -> None:
    with pytest.raises(ConfigError, match="subqueries"):
        register(lake, "bad", "SELECT src FROM link WHERE src IN (SELECT id FROM sensor)")
    assert list_queries(lake) == []


def test_a_plan_is_stored_and_forgotten_on_replace(lake) -> None:
    register(lake, "hot", SQL)
    plan = {"join": "sort_merge", "left": {"scan": "a"}, "right": {"scan": "b"}}
    stored = store_plan(lake, "hot", plan, 0.5, {"tables": {"link": {"rows": 9}}}, "volcano")
    assert (stored.plan, stored.plan_cost, stored.optimizer) == (plan, 0.5, "volcano")
    assert get_query(lake, "hot").stats == {"tables": {"link": {"rows": 9}}}
    register(lake, "hot", SQL.replace("COUNT(*)", "SUM(b.cost)"), replace_existing=True)
    assert get_query(lake, "hot").plan is None


def test_drop_deletes_the_result_table(lake) -> None:
    register(lake, "hot", SQL)
    write_table(lake, "q_hot", pd.DataFrame({"src": ["a"], "n": [1]}))
    assert drop(lake, "hot") is True
    with pytest.raises(Exception, match="does not exist"):
        read_table(lake, "q_hot")


def test_concurrent_registrations_all_land(lake) -> None:
    register(lake, "first", SQL)  # the table exists: the writers below race on its version
    errors: list[BaseException] = []

    def add(i: int) -> None:
        try:
            register(lake, f"q{i}", SQL)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [q.name for q in list_queries(lake)] == ["first", "q0", "q1", "q2", "q3"]


def _row(run: str, at: datetime, node: str, relations: str, operator: str, observed: int,
         left: int | None = None, right: int | None = None) -> RunRow:
    return RunRow("hot", run, None, at, 1.0, 7, "{}", 0.1, "{}", node, relations, operator,
                  operator, True, 10.0, observed, left, right)


def test_observed_join_selectivities_come_from_the_last_run(lake) -> None:
    register(lake, "hot", SQL)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    append_runs(lake, [_row("old", t0, "root", "a,b", "sort_merge", 1, 10, 10),
                       _row("old", t0, "root.L", "a", "scan", 10),
                       _row("old", t0, "root.R", "b", "scan", 10)])
    later = t0 + timedelta(minutes=1)
    append_runs(lake, [_row("new", later, "root", "a,b", "sort_merge", 30, 20, 50),
                       _row("new", later, "root.L", "b", "scan", 20),
                       _row("new", later, "root.R", "a", "scan", 50)])
    assert [r.node for r in last_run(lake, "hot")] == ["root", "root.L", "root.R"]
    parsed = get_query(lake, "hot").parsed()
    selectivity, run = observed_selectivities(lake, parsed)
    assert run == "new" and selectivity == {"a.dst=b.src": pytest.approx(30 / (20 * 50))}
    assert observed_selectivities(lake, parsed, since=later + timedelta(seconds=1)) == ({}, None)


def test_a_dropped_query_forgets_its_last_status(tmp_path) -> None:
    from datetime import UTC, datetime

    from aspen.queries.registry import drop, register
    from aspen.queries.status import QueryStatus, read_statuses, record_statuses
    from aspen.settings import Settings

    lake = Settings(lake=str(tmp_path / "lake"))
    register(lake, "kept", "SELECT COUNT(*) AS n FROM link")
    register(lake, "gone", "SELECT COUNT(*) AS n FROM sensor")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    record_statuses(lake, [QueryStatus("kept", "ok", None, 1, None, now, 0.1),
                           QueryStatus("gone", "failed", "boom", 1, None, now, 0.1)])
    drop(lake, "gone")
    assert set(read_statuses(lake)) == {"kept"}
