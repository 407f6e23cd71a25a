"""Liu 2016, Fig. 21 / Example 7 as a golden test for every optimizer that exists: the root's
best cost is min(1.00, 1.01) = 1.00 by (C,OL), and the AND node (C,O) costs 0.07 + 0.04 + 0.19
= 0.30.

What is mapped (details in fig21.py): Q3S with shuffle-hash joins only, so the OR nodes are the
figure's six and carry no properties; each of the figure's AND nodes is the join in the order
the figure names, with the figure's local cost, and the mirrored order costs 1.00 more. The
figure gives scan (C) 0.04, scan (O) 0.19, (C,O) 0.07 and the plan costs 1.00 and 1.01; scan
(L) 0.45 and the local costs of (O,L) 0.10, (C,OL) 0.22 and (L,CO) 0.26 are chosen to match
them. The (C,O) plan cost is checked as the best cost of the sub-query of C and O."""

from __future__ import annotations

import pytest
from fig21 import BEST_PLAN, CO_PLAN, fig21_space

from aspen.optimizer.exhaustive import best_costs
from aspen.optimizer.methods import METHODS, make_optimizer
from aspen.optimizer.space import OrNode
from aspen.optimizer.stats import Stats


def _optimizer(method: str, aliases: str = "col"):
    """Every method is a module of the repository: one that does not import fails the test."""
    return make_optimizer(method, fig21_space(aliases))


def test_the_space_is_the_figures_graph() -> None:
    space = fig21_space()
    labels = sorted(n.label() for n in space.or_nodes())
    assert labels == ["(c)", "(c,l,o)", "(c,o)", "(l)", "(l,o)", "(o)"]
    assert space.counts() == (6, 8)  # 4 splits of the figure, each in both orders


def test_plan_costs_of_example_7() -> None:
    space = fig21_space()
    cost, _ = best_costs(space, Stats())
    co, col = OrNode(frozenset("co"), None), space.root
    assert cost[co] == pytest.approx(0.30)
    assert cost[OrNode(frozenset("c"), None)] == pytest.approx(0.04)
    assert cost[OrNode(frozenset("o"), None)] == pytest.approx(0.19)
    plan_costs = {alt.label(): space.local_cost(alt, Stats()) + sum(cost[c] for c in alt.children)
                  for alt in space.split(col)}
    assert plan_costs["(c,l,o)=shuffle_hash[(c),(l,o)]"] == pytest.approx(1.00)
    assert plan_costs["(c,l,o)=shuffle_hash[(l),(c,o)]"] == pytest.approx(1.01)
    assert cost[col] == pytest.approx(1.00)


@pytest.mark.parametrize("method", list(METHODS))
def test_every_optimizer_finds_the_figures_best_plan(method: str) -> None:
    result = _optimizer(method).optimize(Stats())
    assert result.cost == pytest.approx(1.00)
    assert result.plan == BEST_PLAN


@pytest.mark.parametrize("method", list(METHODS))
def test_every_optimizer_costs_the_and_node_c_o_at_0_30(method: str) -> None:
    result = _optimizer(method, "co").optimize(Stats())
    assert result.cost == pytest.approx(0.30)
    assert result.plan == CO_PLAN


@pytest.mark.parametrize("method", list(METHODS))
def test_reoptimizing_keeps_the_figures_answer(method: str) -> None:
    optimizer = _optimizer(method)
    optimizer.optimize(Stats())
    result = optimizer.reoptimize({"rows": {"orders": 3e6}})  # the figure's costs are fixed
    assert result.cost == pytest.approx(1.00)
    assert result.plan == BEST_PLAN


def test_volcano_prunes_l_co_and_with_it_co() -> None:
    """Example 7's pruning: once (C,OL) = 1.00 is known, (L,CO) cannot win; its child (CO) is
    searched with budget 1.00 − 0.26 − 0.45 = 0.29 < 0.30 and keeps a lower bound only."""
    result = make_optimizer("volcano", fig21_space()).optimize(Stats())
    assert result.counters.or_pruned == 1  # (CO)
    # cut: (L,CO) and the root's two mirrored orders, (L,O), and both orders of (CO)
    assert result.counters.and_pruned == 6
