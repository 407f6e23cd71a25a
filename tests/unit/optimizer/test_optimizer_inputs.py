"""Hostile Q.json, S.json and C.jsonl through ``aspen optimize``: every wrong type, non-finite or
out-of-bound value is one ConfigError line and exit code 2, never a traceback or a plan; at the
bounds every method answers with a finite cost; a query beyond the size limits is refused at
once, naming the limit."""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from join_graphs import graph

from aspen.cli.main import main
from aspen.errors import ConfigError
from aspen.optimizer import MAX_RELATIONS
from aspen.optimizer.cost import DEFAULT_PARAMS, JOIN_METHODS, card, join_cost, sort_cost
from aspen.optimizer.limits import MAX_JOIN_PAIRS, check_size, join_pairs
from aspen.optimizer.methods import METHODS, make_optimizer
from aspen.optimizer.query import Query
from aspen.optimizer.space import SearchSpace
from aspen.optimizer.stats import MAX_STATISTIC, Stats

QUERY = {"relations": {"c": "customer", "o": "orders", "l": "lineitem"},
         "joins": ["c.c_custkey = o.o_custkey", "o.o_orderkey = l.l_orderkey"],
         "filters": [{"relation": "c", "predicate": "c_mktsegment = 'MACHINERY'"}]}
STATS = {"tables": {"customer": {"rows": 150000, "width": 223},
                    "orders": {"rows": 1500000, "width": 134,
                               "columns": {"o_custkey": {"ndv": 100000}}},
                    "lineitem": {"rows": 6001215, "width": 141}},
         "selectivity": {"c: c_mktsegment = 'MACHINERY'": 0.2}}
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

# values no statistic may take: wrong JSON types, non-finite, negative, beyond the bound
BAD_NUMBERS = st.one_of(
    st.text(max_size=5), st.booleans(), st.none(), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, 1e19, 10 ** 400, -1, -1e-9]),
    st.floats(max_value=-1e-300), st.floats(min_value=MAX_STATISTIC * 1.01, allow_infinity=False),
)
# values a Q.json part may not take where an object, a list or a string belongs
NOT_AN_OBJECT = st.one_of(st.text(max_size=5), st.booleans(), st.none(), st.integers(),
                          st.floats(allow_nan=False), st.lists(st.text(max_size=3), max_size=2))


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(["optimize", *argv])
    except SystemExit as exit_info:
        code = int(exit_info.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _optimize(tmp: Path, capsys: pytest.CaptureFixture[str], query: Any = None,
              stats: Any = None, changes: list[str] | None = None, method: str = "volcano",
              raw_stats: str | None = None) -> tuple[int, str, str]:
    paths = {name: tmp / name for name in ("q.json", "s.json", "c.jsonl")}
    paths["q.json"].write_text(json.dumps(QUERY if query is None else query))
    paths["s.json"].write_text(raw_stats if raw_stats is not None
                               else json.dumps(STATS if stats is None else stats))
    argv = ["--query", str(paths["q.json"]), "--stats", str(paths["s.json"]),
            "--method", method, "--format", "json"]
    if changes is not None:
        paths["c.jsonl"].write_text("\n".join(changes) + "\n")
        argv += ["--changes", str(paths["c.jsonl"])]
    return _run(argv, capsys)


def _refused(result: tuple[int, str, str], fragment: str = "") -> str:
    code, out, err = result
    assert code == 2, (out, err)
    assert out == ""
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert fragment in err, err
    return err.strip()


def _where(draw: st.DrawFn) -> tuple[str, str]:
    return draw(st.sampled_from([("tables", "rows"), ("tables", "width"), ("ndv", "ndv"),
                                 ("selectivity", "join"), ("selectivity", "filter"),
                                 ("params", "net_byte"), ("params", "executors")]))


@st.composite
def hostile_stats(draw: st.DrawFn) -> dict[str, Any]:
    """S.json with one statistic replaced by a value no statistic may take."""
    stats = json.loads(json.dumps(STATS))
    value = draw(BAD_NUMBERS)
    section, name = _where(draw)
    if section == "tables":
        stats["tables"]["orders"][name] = value
    elif section == "ndv":
        stats["tables"]["orders"]["columns"]["o_custkey"]["ndv"] = value
    elif section == "selectivity":
        key = "c.c_custkey=o.o_custkey" if name == "join" else "c: c_mktsegment = 'MACHINERY'"
        stats["selectivity"][key] = value
    else:
        stats["params"] = {name: value}
    return stats


@SETTINGS
@given(stats=hostile_stats())
def test_a_hostile_statistic_is_one_line(tmp_path: Path, capsys, stats: dict[str, Any]) -> None:
    raw = json.dumps(stats)  # NaN and ±inf become the non-JSON words Python's json writes
    line = _refused(_optimize(tmp_path, capsys, raw_stats=raw))
    assert line.startswith("aspen optimize: --stats ")


@SETTINGS
@given(stats=hostile_stats())
def test_a_hostile_change_is_one_line(tmp_path: Path, capsys, stats: dict[str, Any]) -> None:
    # the same value as a change line: kind → name → value
    change: dict[str, Any] = {}
    for table, info in stats["tables"].items():
        for kind in ("rows", "width"):
            if info.get(kind) != STATS["tables"][table].get(kind):
                change = {kind: {table: info.get(kind)}}
    if not change:
        ndv = stats["tables"]["orders"]["columns"]["o_custkey"]["ndv"]
        if ndv != 100000:
            change = {"ndv": {"orders.o_custkey": ndv}}
        elif stats.get("params"):
            change = {"params": stats["params"]}
        else:
            change = {"selectivity": {k: v for k, v in stats["selectivity"].items()
                                      if k not in STATS["selectivity"]
                                      or STATS["selectivity"][k] != v}}
    line = _refused(_optimize(tmp_path, capsys, changes=['{"rows": {"orders": 1}}',
                                                         json.dumps(change)]), "line 2")
    assert line.startswith("aspen optimize: --changes ")


@st.composite
def hostile_queries(draw: st.DrawFn) -> dict[str, Any]:
    """Q.json with one part of the wrong type or empty."""
    query = json.loads(json.dumps(QUERY))
    part = draw(st.sampled_from(["relations", "relation", "joins", "join", "filters", "filter",
                                 "name", "table"]))
    bad = draw(NOT_AN_OBJECT)
    if part == "relations":
        query["relations"] = draw(st.one_of(NOT_AN_OBJECT, st.just({})))
    elif part == "relation":
        query["relations"]["c"] = draw(st.one_of(st.booleans(), st.none(), st.integers(),
                                                 st.just(""), st.just({"name": "x"}),
                                                 st.lists(st.text(max_size=2), max_size=2)))
    elif part == "joins":
        query["joins"] = draw(st.one_of(st.text(max_size=5), st.booleans(), st.integers(),
                                        st.just({"a": 1})))
    elif part == "join":
        query["joins"][0] = draw(st.one_of(st.booleans(), st.none(), st.integers(),
                                           st.just("c.c_custkey"), st.just("c. = o.x"),
                                           st.just(["c.c_custkey", "o.o_custkey"])))
    elif part == "filters":
        query["filters"] = draw(st.one_of(st.text(max_size=5), st.booleans(), st.integers(),
                                          st.just({"relation": "c"})))
    elif part == "filter":
        query["filters"][0] = draw(st.one_of(NOT_AN_OBJECT, st.just({"relation": "c"}),
                                             st.just({"relation": 1, "predicate": "x"}),
                                             st.just({"relation": "c", "predicate": None})))
    elif part == "name":
        query["name"] = draw(st.one_of(st.booleans(), st.integers(), st.none(), st.just([])))
    else:  # an alias that cannot name a column
        query["relations"]["c.x"] = query["relations"].pop("c")
    del bad
    return query


@SETTINGS
@given(query=hostile_queries())
def test_a_hostile_query_is_one_line(tmp_path: Path, capsys, query: dict[str, Any]) -> None:
    line = _refused(_optimize(tmp_path, capsys, query=query))
    assert line.startswith("aspen optimize: --query ")


@pytest.mark.parametrize("text, fragment", [
    ('{"tables": {"orders": {"rows": NaN}}}', "NaN is not a JSON number"),
    ('{"tables": {"orders": {"rows": Infinity}}}', "Infinity is not a JSON number"),
    ('{"tables": {"orders": {"rows": 1e400}}}', "must be a finite number"),
    ('{"tables": {"orders": {"rows": true}}}', "True is a boolean, not a number"),
    ('{"tables": {"orders": {"rows": "5"}}}', "'5' is a string, not a number"),
    ('{"tables": {"orders": {"rows": 2e18}}}', "must be at most 1e+18"),
    ('{"tables": ["orders"]}', "tables must be an object, not list"),
    ('{"selectivity": {"c.c_custkey=o.o_custkey": 0.0}, "params": {"netbyte": 1}}',
     "unknown cost parameter(s) netbyte"),
])
def test_the_messages_say_what_is_wrong(tmp_path: Path, capsys, text: str, fragment: str
                                        ) -> None:
    _refused(_optimize(tmp_path, capsys, raw_stats=text), fragment)


def test_a_list_of_relations_is_one_line(tmp_path: Path, capsys) -> None:
    query = {**QUERY, "relations": ["c", "o", "l"]}
    line = _refused(_optimize(tmp_path, capsys, query=query))
    assert line.endswith("relations must be an object (alias → table), not a list")


# -- at the bounds --------------------------------------------------------------------------


def _extreme_stats(query: Query) -> Stats:
    """Every statistic at its bound: the largest rows, widths, ndvs and parameters, and
    selectivity 1 (nothing filtered, joins keep every pair)."""
    tables = {t: {"rows": MAX_STATISTIC, "width": MAX_STATISTIC} for t in query.relations.values()}
    selectivity = {p.id: 1.0 for p in query.joins} | {f.id: 1.0 for f in query.filters}
    params = dict.fromkeys(DEFAULT_PARAMS, MAX_STATISTIC)
    return Stats.from_json({"tables": tables, "selectivity": selectivity, "params": params})


def test_the_largest_query_at_the_bounds_has_finite_costs() -> None:
    """The worst case of the cost model: MAX_RELATIONS relations, every statistic at its
    bound; every operator over every split of the whole query, and a plan summing three
    operators per relation of the largest, stays finite."""
    query = graph("clique", MAX_RELATIONS)
    stats = _extreme_stats(query)
    root = query.root
    assert math.isfinite(card(query, stats, root))
    worst = sort_cost(query, stats, root)
    for size in range(1, MAX_RELATIONS):
        left = frozenset(next(iter(combinations(sorted(root), size))))
        for method in JOIN_METHODS:
            worst = max(worst, join_cost(query, stats, method, left, root - left),
                        join_cost(query, stats, method, root - left, left))
    assert math.isfinite(worst * 3 * MAX_RELATIONS)


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_answers_at_the_bounds_with_a_finite_cost(tmp_path: Path, capsys,
                                                               method: str) -> None:
    query = graph("cycle", 5, shared=[True, False, True, False, False], filtered=[1])
    stats = _extreme_stats(query).to_json()
    code, out, err = _optimize(tmp_path, capsys, query=query.to_json(), stats=stats,
                               changes=['{"rows": {"t0": 0}}', '{"rows": {"t0": 1e18}}'],
                               method=method)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 3 and all(math.isfinite(line["cost"]) for line in lines)
    assert "Infinity" not in out and "NaN" not in out


# -- the size limits ------------------------------------------------------------------------


def _clique(n: int) -> Query:
    return graph("clique", n)


def test_join_pairs_counts_the_documented_formulas() -> None:
    for n in range(2, 8):  # a clique: 3^n + 1 − 2^(n+1); a star: (n − 1)·2^(n−1)
        assert join_pairs(_clique(n)) == 3 ** n + 1 - 2 ** (n + 1)
        assert join_pairs(graph("star", n)) == (n - 1) * 2 ** (n - 1)
        assert join_pairs(graph("chain", n)) == (n ** 3 - n) // 3


@given(st.sampled_from(["chain", "star", "cycle", "clique"]), st.integers(2, 30))
def test_a_query_is_refused_exactly_beyond_the_limits(shape: str, n: int) -> None:
    query = graph(shape, n)
    beyond = n > MAX_RELATIONS or join_pairs(query, stop=MAX_JOIN_PAIRS) > MAX_JOIN_PAIRS
    if beyond:
        with pytest.raises(ConfigError):
            check_size(query)
    else:
        check_size(query)


@pytest.mark.parametrize("method", list(METHODS))
def test_a_clique_beyond_the_limit_is_refused_at_once(tmp_path: Path, capsys, method: str
                                                      ) -> None:
    n = max(k for k in range(2, MAX_RELATIONS + 1) if join_pairs(_clique(k)) <= MAX_JOIN_PAIRS)
    query = _clique(n + 1)
    with pytest.raises(ConfigError, match="ordered join pairs"):
        make_optimizer(method, SearchSpace(query))
    line = _refused(_optimize(tmp_path, capsys, query=query.to_json(), stats={},
                              method=method), "too densely joined")
    assert str(MAX_JOIN_PAIRS) in line
    star = graph("star", MAX_RELATIONS + 1)
    line = _refused(_optimize(tmp_path, capsys, query=star.to_json(), stats={}, method=method),
                    f"plans at most {MAX_RELATIONS}")


def test_the_refusal_comes_before_any_search() -> None:
    for method, query in (("exhaustive", graph("clique", 14)), ("declarative", graph("star", 30)),
                          ("volcano", graph("chain", 40))):
        space = SearchSpace(query)
        with pytest.raises(ConfigError):
            make_optimizer(method, space)
        assert not space._splits  # nothing of the space was enumerated


def test_the_default_planning_method_plans_a_sparse_query_of_the_limit() -> None:
    from aspen.queries.planner import DEFAULT_METHOD

    query = graph("chain", MAX_RELATIONS)
    result = make_optimizer(DEFAULT_METHOD, SearchSpace(query)).optimize(_extreme_stats(query))
    assert math.isfinite(result.cost) and result.cost > 0
