"""Cross-architecture agreement on random join graphs: the exhaustive DP, brute force over every
plan tree, Volcano and System-R find the same best cost — bushy, left-linear, and after random
changes (re-optimization equals optimization from scratch)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from join_graphs import (
    assert_close,
    changes,
    join_graphs,
    method_subsets,
    plan_count,
    stats_for,
)

from aspen.optimizer.brute import best_by_brute_force
from aspen.optimizer.cost import cost_of
from aspen.optimizer.exhaustive import Exhaustive, best_plan
from aspen.optimizer.query import Query
from aspen.optimizer.space import SearchSpace, SpaceOptions
from aspen.optimizer.stats import Stats
from aspen.optimizer.systemr import SystemR
from aspen.optimizer.volcano import Volcano

OPTIMIZERS = (Volcano, SystemR, Exhaustive)
BRUTE_LIMIT = 2500  # plan trees per example


def check_plan(plan: dict, query: Query, stats: Stats, cost: float,
               options: SpaceOptions) -> None:
    """The plan is one of the space (methods, shape) and costs what the optimizer said."""
    assert_close(cost_of(plan, query, stats), cost, "cost_of(plan)")

    def walk(node: dict) -> None:
        if "scan" in node:
            return
        assert node["join"] in options.methods
        if options.left_linear:
            assert "scan" in node["right"]
        walk(node["left"])
        walk(node["right"])

    walk(plan)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_bushy_optimizers_agree_with_exhaustive(data: st.DataObject) -> None:
    query = data.draw(join_graphs())
    stats = data.draw(stats_for(query))
    options = SpaceOptions(methods=data.draw(method_subsets()))
    exact, _ = best_plan(SearchSpace(query, options), stats)
    for cls in OPTIMIZERS:
        result = cls(SearchSpace(query, options)).optimize(stats)
        assert_close(result.cost, exact, cls.name)
        check_plan(result.plan, query, stats, result.cost, options)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_exhaustive_equals_brute_force(data: st.DataObject) -> None:
    query = data.draw(join_graphs(max_size=4, max_clique=4))
    methods = data.draw(method_subsets())
    left_linear = data.draw(st.booleans())
    if plan_count(query, methods, left_linear) > BRUTE_LIMIT:
        methods = methods[:1]
    stats = data.draw(stats_for(query))
    brute, plan = best_by_brute_force(query, stats, methods, left_linear)
    exact, _ = best_plan(SearchSpace(query, SpaceOptions(methods, left_linear)), stats)
    assert_close(exact, brute)
    assert_close(cost_of(plan, query, stats), brute)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_left_linear_optimizers_agree_with_exhaustive(data: st.DataObject) -> None:
    query = data.draw(join_graphs())
    stats = data.draw(stats_for(query))
    options = SpaceOptions(methods=data.draw(method_subsets()), left_linear=True)
    exact, _ = best_plan(SearchSpace(query, options), stats)
    bushy, _ = best_plan(SearchSpace(query, SpaceOptions(methods=options.methods)), stats)
    assert bushy <= exact * (1 + 1e-9)  # left-deep plans are a part of the bushy ones
    for cls in OPTIMIZERS:
        result = cls(SearchSpace(query, options)).optimize(stats)
        assert_close(result.cost, exact, cls.name)
        check_plan(result.plan, query, stats, result.cost, options)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_reoptimize_after_changes_equals_from_scratch(data: st.DataObject) -> None:
    query = data.draw(join_graphs(max_size=5, max_clique=4))
    stats = data.draw(stats_for(query))
    options = SpaceOptions(methods=data.draw(method_subsets()),
                           left_linear=data.draw(st.booleans()))
    optimizers = [cls(SearchSpace(query, options)) for cls in OPTIMIZERS]
    for optimizer in optimizers:
        optimizer.optimize(stats)
    for _ in range(data.draw(st.integers(1, 3))):
        change = data.draw(changes(query, stats))
        stats, _ = stats.changed(change)
        exact, _ = best_plan(SearchSpace(query, options), stats)
        for optimizer in optimizers:
            result = optimizer.reoptimize(change)
            assert_close(result.cost, exact, optimizer.name)
            check_plan(result.plan, query, stats, result.cost, options)
