"""The search space's size against the analytic counts (Liu 2016, §5.3), and the nodes each
from-scratch optimizer visits and counts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from join_graphs import graph, join_graphs, method_subsets, stats_for

from aspen.optimizer.exhaustive import Exhaustive
from aspen.optimizer.space import OrNode, SearchSpace, SpaceOptions
from aspen.optimizer.stats import Stats
from aspen.optimizer.systemr import SystemR, interesting_nodes, levels
from aspen.optimizer.volcano import Volcano

ONE_METHOD = SpaceOptions(methods=("shuffle_hash",))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_clique_counts_are_analytic(n: int) -> None:
    assert SearchSpace(graph("clique", n), ONE_METHOD).counts() == (
        2 ** n - 1, 3 ** n + 1 - 2 ** (n + 1))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_chain_counts(n: int) -> None:
    # n(n+1)/2 intervals; an interval of k relations has k − 1 cut points, two orders each
    or_nodes, and_nodes = SearchSpace(graph("chain", n), ONE_METHOD).counts()
    assert or_nodes == n * (n + 1) // 2
    assert and_nodes == sum(2 * (k - 1) * (n - k + 1) for k in range(2, n + 1))


def test_levels_of_a_star() -> None:
    # a star of 4: the centre with any non-empty set of leaves, or a leaf alone
    sizes = {k: len(v) for k, v in levels(graph("star", 4)).items()}
    assert sizes == {1: 4, 2: 3, 3: 3, 4: 1}


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_systemr_visits_exactly_the_space(data: st.DataObject) -> None:
    query = data.draw(join_graphs(max_size=5))
    options = SpaceOptions(methods=data.draw(method_subsets()),
                           left_linear=data.draw(st.booleans()),
                           properties=data.draw(st.booleans()))
    space = SearchSpace(query, options)
    visited = {n for exprs in levels(query).values() for e in exprs
               for n in interesting_nodes(space, e)}
    assert visited == set(space.or_nodes())
    stats = data.draw(stats_for(query))
    for cls in (SystemR, Exhaustive):
        counters = cls(SearchSpace(query, options)).optimize(stats).counters
        assert (counters.or_created, counters.and_created) == (
            len(space.or_nodes()), len(space.and_nodes()))
        assert counters.or_recomputed == counters.and_recomputed == 0


def test_counters_of_a_from_scratch_reoptimization() -> None:
    query = graph("cycle", 4, shared=[True, False, True, False])
    space = SearchSpace(query)
    total_or, total_and = len(space.or_nodes()), len(space.and_nodes())
    stats = Stats.from_json({"tables": {f"t{i}": {"rows": 10 ** (i + 2)} for i in range(4)}})
    system_r = SystemR(SearchSpace(query))
    first = system_r.optimize(stats).counters
    assert first.and_pruned == total_and - total_or  # all but one alternative per OR node
    again = system_r.reoptimize({"rows": {"t0": 5}}).counters
    assert (again.or_created, again.and_created) == (0, 0)
    assert (again.or_recomputed, again.and_recomputed) == (total_or, total_and)
    volcano = Volcano(SearchSpace(query))
    v1 = volcano.optimize(stats).counters
    assert 0 < v1.or_created <= total_or and 0 < v1.and_pruned <= v1.and_created <= total_and
    v2 = volcano.reoptimize({"rows": {"t0": 5}}).counters
    assert v2.or_recomputed > 0
    # optimize starts over: everything it visits is created again
    assert volcano.optimize(stats).counters == v1


def test_interesting_orders_of_a_set() -> None:
    query = graph("chain", 3, shared=[True, False])  # r0.k = r1.k, r1.c1_2 = r2.c1_2
    space = SearchSpace(query)
    labels = [n.label() for n in interesting_nodes(space, frozenset({"r0", "r1"}))]
    assert labels == ["(r0,r1)", "(r0,r1)@r1.c1_2=r2.c1_2"]
    assert interesting_nodes(space, query.root) == [OrNode(query.root, None)]
    assert interesting_nodes(SearchSpace(query, ONE_METHOD), frozenset({"r0"})) == [
        OrNode(frozenset({"r0"}), None)]
