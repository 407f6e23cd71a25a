"""Brute force enumerates every plan tree once, and its best is the exhaustive optimum on
fixed queries of up to 6 relations."""

from __future__ import annotations

import json

import pytest
from join_graphs import assert_close, graph, plan_count

from aspen.errors import ConfigError
from aspen.optimizer.brute import best_by_brute_force, plans
from aspen.optimizer.cost import cost_of
from aspen.optimizer.exhaustive import best_plan
from aspen.optimizer.space import SearchSpace, SpaceOptions
from aspen.optimizer.stats import Stats

HASH = ("shuffle_hash",)


def _stats(n: int) -> Stats:
    return Stats.from_json({"tables": {f"t{i}": {"rows": [5e6, 300, 4e4, 20, 9e5, 7][i],
                                                 "width": 20 + 30 * i} for i in range(n)},
                            "params": {"broadcast_limit": 5e4}})


@pytest.mark.parametrize("shape, n, methods, left_linear, count", [
    ("chain", 2, ("broadcast_hash", "shuffle_hash", "sort_merge"), False, 6),
    ("chain", 3, HASH, False, 8),
    ("chain", 3, HASH, True, 4),
    ("clique", 3, HASH, False, 12),
    ("clique", 4, HASH, False, 120),  # 4! orders × Catalan(3) shapes
])
def test_plan_counts(shape: str, n: int, methods: tuple[str, ...], left_linear: bool,
                     count: int) -> None:
    query = graph(shape, n)
    trees = [json.dumps(p, sort_keys=True) for p in plans(query, methods, left_linear)]
    assert len(trees) == len(set(trees)) == count == plan_count(query, methods, left_linear)


def test_every_generated_plan_is_valid() -> None:
    query = graph("cycle", 4, shared=[True, True, False, False])
    stats = _stats(4)
    costs = [cost_of(p, query, stats) for p in plans(query, ("shuffle_hash", "sort_merge"))]
    assert len(costs) == plan_count(query, ("shuffle_hash", "sort_merge")) and min(costs) > 0


@pytest.mark.parametrize("shape, n, methods, left_linear", [
    ("chain", 5, ("broadcast_hash", "sort_merge"), False),
    ("cycle", 4, ("broadcast_hash", "shuffle_hash", "sort_merge"), False),
    ("clique", 4, ("broadcast_hash", "sort_merge"), True),
    ("chain", 6, HASH, False),
    ("star", 6, ("broadcast_hash",), True),
])
def test_brute_force_is_the_exhaustive_optimum(shape: str, n: int, methods: tuple[str, ...],
                                               left_linear: bool) -> None:
    query = graph(shape, n, shared=[i % 2 == 0 for i in range(n * n)])
    stats = _stats(n)
    brute, plan = best_by_brute_force(query, stats, methods, left_linear)
    exact, _ = best_plan(SearchSpace(query, SpaceOptions(methods, left_linear)), stats)
    assert_close(brute, exact)
    assert_close(cost_of(plan, query, stats), brute)


def test_unknown_methods() -> None:
    with pytest.raises(ConfigError, match="unknown join method"):
        plans(graph("chain", 2), ("nested_loop",))
