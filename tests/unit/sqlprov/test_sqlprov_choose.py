"""Choosing the instrumentation: the plan space's enumeration (seed 001's Example 3), the
strategies on synthetic costs (exhaustive takes the argmin, the limit caps, annealing, the
adaptive stop with a fake clock), and that every plan of a query's space — the optimized one
too — gives the unoptimized answer and formulas (hypothesis); ``--explain`` shows the choices."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlprov_helpers import answer, answer_of, assert_same
from test_sqlprov_meaning import frames, lakes

from aspen.errors import ConfigError
from aspen.provenance.bdd import ProvenanceManager
from aspen.sqlprov.choose import Chooser, next_path, search
from aspen.sqlprov.optimize import plan_query
from aspen.sqlprov.parse import parse_sql
from aspen.sqlprov.run import run_frames


def example3(choose):
    """Seed 001's Example 3: an aggregation over a join; Window (0) leaves one join-order
    choice, Join (1) adds a second join."""
    method = choose("aggregation", ("window", "join"))
    first = choose("join order", ("ab", "ba"))
    if method == 1:
        return (method, first, choose("second join order", ("ab", "ba")))
    return (method, first)


def test_example_3_enumerates_its_six_plans_in_order() -> None:
    found = search(example3, lambda plan: 1.0, "exhaustive")
    assert [t.path for t in found.tried] == [(0, 0), (0, 1), (1, 0, 0), (1, 0, 1), (1, 1, 0),
                                             (1, 1, 1)]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(2, 3), max_size=5))
def test_independent_choices_give_every_plan_once(sizes) -> None:
    def generate(choose):
        return tuple(choose(f"c{i}", tuple("xyz"[:k])) for i, k in enumerate(sizes))

    found = search(generate, lambda plan: 1.0, "exhaustive", limit=10_000)
    paths = [t.path for t in found.tried]
    assert sorted(paths) == sorted(itertools.product(*(range(k) for k in sizes)))
    assert next_path(paths[-1], sizes) is None


@given(st.lists(st.floats(0, 100), min_size=8, max_size=8))
def test_exhaustive_takes_the_argmin_and_the_limit_caps(costs) -> None:
    def generate(choose):
        return choose("a", ("0", "1")) * 4 + choose("b", ("0", "1")) * 2 + choose("c", ("0", "1"))

    found = search(generate, lambda plan: costs[plan], "exhaustive")
    # the least cost, or the first plan within 2 % of it
    assert min(costs) <= found.best.cost <= min(costs) * 1.02
    assert found.best.plan == next(i for i, c in enumerate(costs) if c <= min(costs) * 1.02)
    assert len(search(generate, lambda plan: costs[plan], "exhaustive", limit=3).tried) == 3


def test_annealing_finds_the_cheapest_of_a_small_space() -> None:
    def generate(choose):
        return tuple(choose(f"c{i}", ("0", "1")) for i in range(4))

    target = (1, 0, 1, 1)
    found = search(generate, lambda p: float(sum(a != b for a, b in zip(p, target,
                                                                        strict=True))),
                   "annealing", limit=16, seed=3, cooling=0.2)
    assert found.best.plan == target


class FakeClock:
    """Each reading advances by ``step`` seconds: one plan costed per reading."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_the_adaptive_stop_fires_once_the_best_is_cheaper_than_optimizing() -> None:
    costs = [5.0, 2.5, 0.5, 0.1, 0.0, 0.0, 0.0, 0.0]

    def generate(choose):
        return choose("a", ("0", "1")) * 4 + choose("b", ("0", "1")) * 2 + choose("c", ("0", "1"))

    found = search(generate, lambda plan: costs[plan], "adaptive", clock=FakeClock(1.0))
    # after plan 0 one second was spent (best 5.0), after plan 2 three (best 0.5 < 3): stop
    assert found.stopped_early and len(found.tried) == 3 and found.best.cost == 0.5
    assert not search(generate, lambda p: costs[p], "exhaustive",
                      clock=FakeClock(1.0)).stopped_early


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 10.0), min_size=8, max_size=8), st.floats(0.01, 1.0))
def test_adaptive_total_stays_within_twice_the_optimum(costs, step) -> None:
    def generate(choose):
        return choose("a", ("0", "1")) * 4 + choose("b", ("0", "1")) * 2 + choose("c", ("0", "1"))

    found = search(generate, lambda plan: costs[plan], "adaptive", clock=FakeClock(step))
    # the optimum: the best total of optimizing through plan i and running the best so far
    optimum = min(step * (i + 1) + min(costs[: i + 1]) for i in range(8))
    assert found.seconds + found.best.cost <= 2 * optimum + step + 1e-9


def test_replaying_a_path_gives_the_same_plan() -> None:
    query = parse_sql("SELECT x.src, COUNT(*) AS n FROM link x JOIN link y ON x.dst = y.src "
                      "GROUP BY x.src")
    from aspen.sqlprov.instrument import instrument

    texts = {instrument(query, choose=Chooser((1, 0, 1))).instrumented_sql("duckdb")
             for _ in range(2)}
    assert len(texts) == 1 and "OVER (PARTITION BY" in next(iter(texts))


def test_unknown_strategy_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="unknown search strategy 'greedy'"):
        search(example3, lambda plan: 1.0, "greedy")


#: queries with choice points of every kind: aggregation method, projection, DISTINCT
SPACE = [
    "SELECT x.src, COUNT(*) AS n, MAX(y.cost) AS c FROM link x JOIN link y ON x.dst = y.src "
    "GROUP BY x.src HAVING COUNT(*) >= 2",
    "SELECT dst, SUM(cost) AS c FROM link WHERE cost > 1 GROUP BY dst",
    "SELECT DISTINCT q.n FROM (SELECT DISTINCT dst AS n FROM link) q JOIN sensor s ON s.id = q.n",
    "SELECT s.id FROM sensor s WHERE NOT EXISTS (SELECT 1 FROM link l WHERE l.src = s.id) "
    "UNION SELECT id FROM triggered",
]


@pytest.mark.parametrize("sql", SPACE, ids=range(len(SPACE)))
@settings(max_examples=2, deadline=None)
@given(tuples=lakes())
def test_every_plan_gives_the_unoptimized_answer_and_formulas(sql, tuples) -> None:
    full = frames(tuples)
    query = parse_sql(sql)
    m = ProvenanceManager()
    reference = answer(query, full, m)
    found = plan_query(query, cost=lambda text: 1.0, strategy="exhaustive").found
    assert found is not None and len(found.tried) >= 2
    for tried in found.tried:
        assert_same(reference, answer_of(tried.plan[0], query.names, full, m), (sql, tried.path))
    # and the front door, optimized by DuckDB's estimates, agrees
    optimized = run_frames(full, sql, manager=m, strategy="exhaustive")
    assert_same(reference, optimized, sql)


def test_the_chosen_plan_is_the_cheapest_duckdb_estimate() -> None:
    from aspen.sqlprov.cost import duckdb_seconds
    from aspen.sqlprov.engines import registered

    links = pd.DataFrame({"src": [f"n{i % 50}" for i in range(2000)],
                          "dst": [f"n{i % 37}" for i in range(2000)], "cost": [1.0] * 2000})
    query = parse_sql("SELECT src, COUNT(*) AS n FROM link GROUP BY src")
    with registered({"link": links}) as con:
        plan = plan_query(query, cost=lambda text: duckdb_seconds(con, text),
                          strategy="exhaustive")
    assert plan.found is not None and len(plan.found.tried) == 4  # early/late × join/window
    least = min(t.cost for t in plan.found.tried)
    assert least > 0 and least <= plan.cost <= least * 1.02
    assert {p.options[p.taken] for t in plan.found.tried for p in t.points} == {
        "early", "late", "join-back", "window"}
