"""The procedural incremental re-optimizers (Liu 2016, ch. 5): exactness after changes, the
analytic recomputation counts of §5.3, and what the memoization and conditional-testing options
change (the work) and do not change (the plan)."""

from __future__ import annotations

import math

import pytest
from join_graphs import assert_close, graph

from aspen.errors import ConfigError
from aspen.optimizer.exhaustive import best_plan
from aspen.optimizer.procedural import BottomUp, TopDown
from aspen.optimizer.procedural.graph import AndOrGraph
from aspen.optimizer.query import Query
from aspen.optimizer.space import SearchSpace, SpaceOptions
from aspen.optimizer.stats import Stats
from aspen.optimizer.tpch import QUERIES, tpch_stats

VARIANTS = [(cls, memoize, conditional) for cls in (BottomUp, TopDown)
            for memoize in ("best", "all") for conditional in (True, False)]
ONE_METHOD = SpaceOptions(methods=("shuffle_hash",), properties=False)


def ids(variant: tuple) -> str:
    cls, memoize, conditional = variant
    return f"{cls.name}-{memoize}-{'ct' if conditional else 'noct'}"


def spread_stats(query: Query) -> Stats:
    """Rows 10, 100, 1000, … per table: no two relations alike."""
    return Stats.from_json({"tables": {t: {"rows": 10 ** (i + 1), "width": 40 + 7 * i}
                                       for i, t in enumerate(sorted(query.relations.values()))}})


def clique_stats(query: Query) -> Stats:
    """Rows 1000–1500 and join selectivities about 0.1: cardinalities stay far from 0, so a
    change moves every cost that reads it (a tiny card(out) could round its change away)."""
    return Stats.from_json({
        "tables": {t: {"rows": 1000 + 100 * i} for i, t in enumerate(sorted(
            query.relations.values()))},
        "selectivity": {p.id: 0.1 + 0.01 * i for i, p in enumerate(query.joins)}})


Q8_CHANGES = [
    {"rows": {"lineitem": 1.2e7}},
    {"selectivity": {"p: p_type = 'ECONOMY ANODIZED STEEL'": 0.05}},
    {"rows": {"nation": 2500, "customer": 30000}},
    {"params": {"broadcast_limit": 1e5}},
    {"ndv": {"orders.o_custkey": 50}},
    {"width": {"orders": 900}, "rows": {"lineitem": 6001215}},
    {"params": {"broadcast_limit": 1e8}},
]


@pytest.mark.parametrize("variant", VARIANTS, ids=ids)
def test_tpch_q8_matches_the_oracle_after_every_change(variant: tuple) -> None:
    cls, memoize, conditional = variant
    space = SearchSpace(QUERIES["Q8"])
    stats = tpch_stats()
    optimizer = cls(space, memoize=memoize, conditional=conditional)
    result = optimizer.optimize(stats)
    for change in [None, *Q8_CHANGES]:
        if change is not None:
            stats, _ = stats.changed(change)
            result = optimizer.reoptimize(change)
        cost, plan = best_plan(space, stats)
        assert result.cost == cost  # the same sums as the oracle's, bit for bit
        assert result.plan == plan


def test_top_down_prunes_on_tpch_q8() -> None:
    space = SearchSpace(QUERIES["Q8"])
    counters = TopDown(space).optimize(tpch_stats()).counters
    assert counters.and_created < len(space.and_nodes())
    assert counters.or_created < len(space.or_nodes())
    assert counters.and_pruned > 0 and counters.or_pruned > 0


def _clique_change(n: int, kind: str) -> tuple[dict, int, int]:
    """A change on an n-clique of level k (rows of one relation: k = 1; the selectivity of
    one join predicate: k = 2) and the OR / join AND nodes §5.3 says it affects."""
    if kind == "rows":
        k, change = 1, {"rows": {"t0": 12345.0}}
        ands = 2 ** k * 3 ** (n - k) - 2 ** k - 2 ** (n - k + 1) + 2
    else:
        k, change = 2, {"selectivity": {"r0.c0_1=r1.c0_1": 0.05}}
        ands = 2 ** k * 3 ** (n - k) - 2 ** (n - k + 1)
    return change, 2 ** (n - k), ands


@pytest.mark.parametrize("kind", ["rows", "selectivity"])
@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_affected_nodes_match_the_analytic_counts(n: int, kind: str) -> None:
    """§5.3 (one join method, no properties, no pruning): a change of level k marks the
    2^(n−k) OR nodes above it; a cardinality change 2^k·3^(n−k) − 2^k − 2^(n−k+1) + 2 join AND
    nodes, a selectivity change 2^k·3^(n−k) − 2^(n−k+1) (the siblings of level k as well)."""
    space = SearchSpace(graph("clique", n), ONE_METHOD)
    change, or_count, and_count = _clique_change(n, kind)
    _, moved = Stats().changed(change)
    affected = space.affected(moved)
    joins = [alt for alt in affected if alt.op == "join"]
    assert len(joins) == and_count
    assert len({alt.parent for alt in affected}) == or_count
    g = AndOrGraph(space)
    g.expand_all()
    assert {g.and_nodes[j] for j in g.affected(moved)} == set(affected)


@pytest.mark.parametrize("memoize", ["best", "all"])
@pytest.mark.parametrize("kind", ["rows", "selectivity"])
@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_bottom_up_recomputes_the_analytic_counts(n: int, kind: str, memoize: str) -> None:
    """Without conditional testing the bottom-up re-optimizer recomputes exactly the affected
    nodes of §5.3 (plus the changed relation's scan for a cardinality change), under both
    memoization schemes alike — every alternative of a visited OR node changed here, so the
    stored PlanCosts of memoize-all save nothing (the seed's observation holds)."""
    query = graph("clique", n)
    space = SearchSpace(query, ONE_METHOD)
    change, or_count, and_count = _clique_change(n, kind)
    counts = {}
    for conditional in (False, True):
        optimizer = BottomUp(space, memoize=memoize, conditional=conditional)
        optimizer.optimize(clique_stats(query))
        counters = optimizer.reoptimize(change).counters
        counts[conditional] = (counters.or_recomputed, counters.and_recomputed)
    scans = 1 if kind == "rows" else 0
    assert counts[False] == (or_count, and_count + scans)
    assert counts[True][0] == or_count and counts[True][1] <= and_count + scans


@pytest.mark.parametrize("variant", VARIANTS, ids=ids)
def test_a_change_and_its_inverse_give_back_the_plan(variant: tuple) -> None:
    cls, memoize, conditional = variant
    query = graph("cycle", 5, shared=[True, True, False, False, True], filtered=[2])
    space = SearchSpace(query)
    optimizer = cls(space, memoize=memoize, conditional=conditional)
    first = optimizer.optimize(spread_stats(query))
    forth = {"rows": {"t4": 3.0, "t0": 5e6}, "selectivity": {"r2: x < 5": 0.9}}
    back = {"rows": {"t4": 1e5, "t0": 10.0}, "selectivity": {"r2: x < 5": 0.1}}
    moved = optimizer.reoptimize(forth)
    assert moved.plan != first.plan
    again = optimizer.reoptimize(back)
    assert (again.plan, again.cost) == (first.plan, first.cost)


def test_conditional_testing_skips_alternatives_that_only_got_dearer() -> None:
    """A higher broadcast penalty makes only broadcast joins of big inputs dearer: where the
    best alternative is not one of them, nothing can beat it, and conditional testing
    recomputes no PlanCost there; without it every alternative of such an OR node is read."""
    query = graph("star", 5, shared=[True, False, True, False])
    space = SearchSpace(query)
    stats, _ = spread_stats(query).changed({"params": {"broadcast_limit": 1e4}})
    change = {"params": {"broadcast_penalty": 80.0}}
    work = {}
    for memoize in ("best", "all"):
        for conditional in (True, False):
            optimizer = BottomUp(space, memoize=memoize, conditional=conditional)
            optimizer.optimize(stats)
            result = optimizer.reoptimize(change)
            work[memoize, conditional] = result.counters
            assert result.cost == best_plan(space, stats.changed(change)[0])[0]
    for memoize in ("best", "all"):
        on, off = work[memoize, True], work[memoize, False]
        assert on.or_recomputed == off.or_recomputed > 0
        assert on.and_recomputed < off.and_recomputed
    # memoize-all reads the unchanged alternatives' stored PlanCost instead of recomputing it
    assert work["all", False].and_recomputed < work["best", False].and_recomputed
    assert work["all", True].and_recomputed == work["best", True].and_recomputed


@pytest.mark.parametrize("cls", [BottomUp, TopDown])
def test_an_empty_change_does_nothing(cls: type) -> None:
    query = graph("chain", 4)
    optimizer = cls(SearchSpace(query))
    first = optimizer.optimize(spread_stats(query))
    again = optimizer.reoptimize({"rows": {"t0": 10.0}})  # t0 had 10 rows already
    assert (again.plan, again.cost) == (first.plan, first.cost)
    assert all(v == 0 for v in again.counters.as_dict().values())


@pytest.mark.parametrize("cls", [BottomUp, TopDown])
def test_a_single_relation(cls: type) -> None:
    query = Query.from_json({"relations": {"a": "t"}, "joins": []})
    optimizer = cls(SearchSpace(query))
    assert optimizer.optimize(Stats()).plan == {"scan": "a"}
    result = optimizer.reoptimize({"rows": {"t": 10.0}})
    assert_close(result.cost, best_plan(SearchSpace(query), Stats().changed(
        {"rows": {"t": 10.0}})[0])[0])


def test_bottom_up_counts_a_from_scratch_run_as_created() -> None:
    space = SearchSpace(graph("clique", 4), ONE_METHOD)
    counters = BottomUp(space).optimize(Stats()).counters
    assert (counters.or_created, counters.and_created) == (
        len(space.or_nodes()), len(space.and_nodes()))
    assert counters.or_recomputed == counters.and_recomputed == counters.and_pruned == 0


@pytest.mark.parametrize("cls", [BottomUp, TopDown])
def test_errors(cls: type) -> None:
    space = SearchSpace(graph("chain", 2))
    with pytest.raises(ConfigError, match="memoize"):
        cls(space, memoize="some")
    with pytest.raises(ConfigError, match="before optimize"):
        cls(space).reoptimize({"rows": {"t0": 1.0}})


def test_top_down_re_introduces_what_a_change_makes_viable() -> None:
    """A chain whose middle relation is huge: the plans joining it early are pruned. Making
    it tiny re-enters the search under the raised bounds (re-introduction); making it huge
    again prunes those subtrees."""
    query = graph("chain", 5)
    space = SearchSpace(query)
    stats, _ = spread_stats(query).changed({"rows": {"t2": 1e9}})
    optimizer = TopDown(space)
    optimizer.optimize(stats)
    small = optimizer.reoptimize({"rows": {"t2": 1.0}})
    big = optimizer.reoptimize({"rows": {"t2": 1e9}})
    assert small.counters.or_created + small.counters.or_recomputed > 0
    assert big.counters.or_pruned > 0
    for result, rows in ((small, 1.0), (big, 1e9)):
        assert result.cost == best_plan(space, stats.changed({"rows": {"t2": rows}})[0])[0]
    assert math.isfinite(big.cost)
