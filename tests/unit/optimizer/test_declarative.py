"""The declarative optimizer (Liu 2016, ch. 4) on literal cases: the aggregates' delta cases,
the worked example of Fig. 21 (also re-optimized, with hand-computed numbers), pruning and
garbage collection on TPC-H queries, the counters, and the errors. Random cases are in
test_declarative_properties.py."""

from __future__ import annotations

from itertools import product

import pytest
from fig21 import BEST_PLAN, CO_PLAN, FIG21_LOCAL, Fig21Space, fig21_space
from join_graphs import assert_close

from aspen.errors import ConfigError
from aspen.optimizer.declarative import DeclarativeOptimizer, Pruning
from aspen.optimizer.declarative.aggregates import MaxAggregate, MinAggregate, SortedEntries
from aspen.optimizer.declarative.direction import change_direction
from aspen.optimizer.exhaustive import best_costs, best_plan
from aspen.optimizer.space import AndNode, OrNode, SearchSpace, SpaceOptions
from aspen.optimizer.stats import Stats
from aspen.optimizer.tpch import QUERIES, tpch_stats

ALL_PRUNINGS = [Pruning(*flags) for flags in product((False, True), repeat=4)]


# -- the aggregates: incremental aggregate selection (§4.3.1) and the bound ranges (§4.3.3) ----


def test_case_1_an_insertion_below_the_minimum_becomes_it() -> None:
    best = MinAggregate()
    assert best.upsert(1, 0.5) == ((float("inf"), -1), (0.5, 1))
    assert best.upsert(2, 0.3) == ((0.5, 1), (0.3, 2))
    assert best.upsert(3, 0.9) is None  # above the minimum: BestCost unchanged


def test_case_2_deleting_the_minimum_recovers_the_next_best() -> None:
    best = MinAggregate()
    for ident, cost in ((1, 0.5), (2, 0.3), (3, 0.9)):
        best.upsert(ident, cost)
    assert best.delete(3) is None
    assert best.delete(2) == ((0.3, 2), (0.5, 1))
    assert best.delete(1) == ((0.5, 1), (float("inf"), -1))


def test_case_3_raising_the_minimum_takes_min_of_new_and_next_best() -> None:
    best = MinAggregate()
    for ident, cost in ((1, 0.5), (2, 0.3)):
        best.upsert(ident, cost)
    assert best.upsert(2, 0.4) == ((0.3, 2), (0.4, 2))    # still the minimum
    assert best.upsert(2, 0.8) == ((0.4, 2), (0.5, 1))    # the next best takes over
    assert best.upsert(1, 0.6) == ((0.5, 1), (0.6, 1))    # a raise of the minimum again


def test_case_4_lowering_a_cost_takes_min_of_new_and_current() -> None:
    best = MinAggregate()
    for ident, cost in ((1, 0.5), (2, 0.3)):
        best.upsert(ident, cost)
    assert best.upsert(1, 0.4) is None                     # lowered, still above the minimum
    assert best.upsert(1, 0.1) == ((0.3, 2), (0.1, 1))    # lowered below it
    assert best.upsert(1, 0.05) == ((0.1, 1), (0.05, 1))  # the minimum lowered


def test_ties_go_to_the_first_alternative_in_split_order() -> None:
    best = MinAggregate()
    best.upsert(4, 1.0)
    assert best.upsert(2, 1.0) == ((1.0, 4), (1.0, 2))
    assert best.upsert(7, 1.0) is None


def test_max_bound_keeps_every_parent_bound() -> None:
    bound = MaxAggregate()
    bound.upsert(10, 0.7)
    bound.upsert(11, 0.9)
    assert bound.best() == (0.9, 11)
    assert bound.delete(11) == ((0.9, 11), (0.7, 10))      # the next highest parent bound
    assert bound.delete(10) == ((0.7, 10), (float("-inf"), -1))


def test_a_bound_raise_reinserts_b_to_b_prime_and_a_drop_prunes_b_prime_to_b() -> None:
    pruned, live = SortedEntries(), SortedEntries()
    for ident, low in enumerate((1.0, 1.2, 1.5, 2.0)):
        pruned.put(ident, low)
    assert pruned.ids_upto(1.5) == [0, 1, 2]      # b → b' = 1.5: re-insert lows ≤ 1.5
    for ident, low in enumerate((0.4, 0.6, 0.9)):
        live.put(ident, low)
    assert sorted(live.ids_above(0.5)) == [1, 2]  # b → b' = 0.5: prune lows > 0.5


# -- Fig. 21 / Example 7 -----------------------------------------------------------------------


@pytest.mark.parametrize("pruning", ALL_PRUNINGS, ids=lambda p: "+".join(p.enabled()) or "none")
def test_fig21_root_is_1_00_by_c_ol(pruning: Pruning) -> None:
    result = DeclarativeOptimizer(fig21_space(), pruning).optimize(Stats())
    assert result.cost == pytest.approx(1.00)
    assert result.plan == BEST_PLAN


def test_fig21_and_node_c_o_costs_0_30() -> None:
    result = DeclarativeOptimizer(fig21_space("co")).optimize(Stats())
    assert result.cost == pytest.approx(0.30)
    assert result.plan == CO_PLAN


def test_fig21_plan_costs_are_kept_by_the_aggregate() -> None:
    opt = DeclarativeOptimizer(fig21_space(), Pruning.equivalent_only())
    opt.optimize(Stats())
    snap = opt.snapshot()
    costs = {a.label(): c for a, c in snap.plan_cost.items()}
    assert costs["(c,l,o)=shuffle_hash[(c),(l,o)]"] == pytest.approx(1.00)
    assert costs["(c,l,o)=shuffle_hash[(l),(c,o)]"] == pytest.approx(1.01)  # pruned, kept
    assert costs["(c,o)=shuffle_hash[(c),(o)]"] == pytest.approx(0.30)
    assert snap.best[OrNode(frozenset("co"), None)] == pytest.approx(0.30)
    live = {a.label() for a in snap.live if a.parent == snap.root}
    assert live == {"(c,l,o)=shuffle_hash[(c),(l,o)]"}  # aggregate selection: the best only


def test_fig21_all_pruning_keeps_exactly_the_optimal_tree() -> None:
    """(L,CO) = 1.01 is pruned, so (CO) loses its only parent and (C,O) goes too (§4.2.2)."""
    opt = DeclarativeOptimizer(fig21_space())
    opt.optimize(Stats())
    snap = opt.snapshot()
    assert {a.label() for a in snap.live} == {
        "(c,l,o)=shuffle_hash[(c),(l,o)]", "(l,o)=shuffle_hash[(o),(l)]",
        "(c)=scan[]", "(o)=scan[]", "(l)=scan[]"}
    co = OrNode(frozenset("co"), None)
    assert co not in snap.active and snap.refs.get(co, 0) == 0
    assert snap.bound[snap.root] == pytest.approx(1.00)


class TunableFig21(Fig21Space):
    """Fig. 21 with the local cost of (L,CO) read from the parameter ``l_co``."""

    def local_cost(self, alt: AndNode, stats: Stats) -> float:
        if alt.left is not None and alt.right is not None and (
                alt.left.expr, alt.right.expr) == (frozenset("l"), frozenset("co")):
            return stats.param("l_co", FIG21_LOCAL[("l", "co")])
        return super().local_cost(alt, stats)


def _tunable() -> TunableFig21:
    base = fig21_space()
    return TunableFig21(base.query, base.options)


@pytest.mark.parametrize("pruning", [Pruning(), Pruning.none(), Pruning(bounding=False)],
                         ids=lambda p: "+".join(p.enabled()) or "none")
def test_fig21_reoptimized_by_hand(pruning: Pruning) -> None:
    """(L,CO) = l_co + 0.45 + 0.30: at 0.20 it costs 0.95 and wins; back at 0.26, 1.01 loses;
    at 0.25, 1.00 ties (C,OL), which comes first in split order and stays."""
    opt = DeclarativeOptimizer(_tunable(), pruning)
    opt.optimize(Stats())
    l_co = {"join": "shuffle_hash", "left": {"scan": "l"}, "right": CO_PLAN}
    cheaper = opt.reoptimize({"params": {"l_co": 0.20}})
    assert cheaper.cost == pytest.approx(0.95)
    assert cheaper.plan == l_co
    assert cheaper.counters.or_recomputed >= 1   # (CO) re-introduced: RefCount 0 → 1
    back = opt.reoptimize({"params": {"l_co": 0.26}})
    assert back.cost == pytest.approx(1.00)
    assert back.plan == BEST_PLAN
    tie = opt.reoptimize({"params": {"l_co": 0.25}})
    assert tie.cost == pytest.approx(1.00)
    assert tie.plan == best_plan(opt.space, opt.stats)[1] == BEST_PLAN


# -- TPC-H: pruning, garbage collection, counters ----------------------------------------------


def _q(name: str) -> tuple[SearchSpace, Stats]:
    return SearchSpace(QUERIES[name]), tpch_stats()


@pytest.mark.parametrize("name", ["Q3S", "Q5S", "Q10"])
@pytest.mark.parametrize("order", ["fifo", "lifo", "random"])
def test_tpch_queries_every_pruning_and_order_agree(name: str, order: str) -> None:
    space, stats = _q(name)
    cost, plan = best_plan(space, stats)
    for pruning in ALL_PRUNINGS:
        result = DeclarativeOptimizer(space, pruning, order=order, seed=7).optimize(stats)
        assert_close(result.cost, cost)
        assert result.plan == plan


def _check_converged(opt: DeclarativeOptimizer) -> None:
    """RefCounts = live parents; no live plan above its Bound; Bound(root) = BestCost(root)."""
    snap = opt.snapshot()
    space = opt.space
    parents: dict[OrNode, int] = {}
    for alt in snap.visible:
        for child in alt.children:
            parents[child] = parents.get(child, 0) + 1
    for node, refs in snap.refs.items():
        assert refs == parents.get(node, 0) + (node == snap.root), node.label()
    for alt in snap.live:
        o = alt.parent
        assert alt in snap.plan_cost
        assert snap.plan_cost[alt] <= snap.bound[o] + snap.bound_slack[o], alt.label()
    assert snap.bound[snap.root] == snap.best[snap.root]
    _, choice = best_costs(space, opt.stats)
    tree: set[AndNode] = set()
    todo = [space.root]
    while todo:
        alt = choice[todo.pop()]
        tree.add(alt)
        todo.extend(alt.children)
    assert snap.live == tree  # garbage collection is complete (Propositions 9–10)


@pytest.mark.parametrize("name", ["Q5S", "Q8Join"])
def test_tpch_all_pruning_converges_to_the_optimal_tree(name: str) -> None:
    space, stats = _q(name)
    opt = DeclarativeOptimizer(space)
    opt.optimize(stats)
    _check_converged(opt)
    for change in ({"rows": {"orders": 3e6}}, {"rows": {"orders": 1.5e6}},
                   {"selectivity": {"l.l_orderkey=o.o_orderkey": 1e-6}},
                   {"params": {"net_byte": 1e-8}}):
        result = opt.reoptimize(change)
        assert_close(result.cost, best_plan(space, opt.stats)[0])
        _check_converged(opt)


def test_q8join_reoptimization_touches_less_than_the_changes_reach() -> None:
    """A rise (costs only go up) re-costs a few plans: the others keep their old lower bounds;
    its inverse (costs go down) re-costs at most the AND nodes the change reaches."""
    space, stats = _q("Q8Join")
    opt = DeclarativeOptimizer(space)
    first = opt.optimize(stats)
    assert first.counters.and_created < len(space.and_nodes())  # bounding skipped some
    pred = "l.l_orderkey=o.o_orderkey"
    reach = len(space.affected({("selectivity", pred)}))
    for sel, share in ((2e-6, 0.2), (1 / 1.5e6, 1.0)):
        again = opt.reoptimize({"selectivity": {pred: sel}})
        assert_close(again.cost, best_plan(space, opt.stats)[0])
        touched = again.counters.and_created + again.counters.and_recomputed
        assert touched <= share * reach, (sel, touched, reach)


def test_a_change_that_moves_nothing_touches_nothing() -> None:
    space, stats = _q("Q3S")
    opt = DeclarativeOptimizer(space)
    first = opt.optimize(stats)
    same = opt.reoptimize({"rows": {"orders": stats.rows("orders")}})
    assert same.plan == first.plan and same.cost == first.cost
    assert all(v == 0 for v in same.counters.as_dict().values())


def test_pruning_shrinks_the_state() -> None:
    space, stats = _q("Q5S")
    sizes = {}
    for pruning in (Pruning.none(), Pruning.equivalent_only(), Pruning()):
        opt = DeclarativeOptimizer(space, pruning)
        opt.optimize(stats)
        sizes[pruning.enabled()] = opt.state_size()["total"]
    full, evita, none = (sizes[p.enabled()] for p in (Pruning(), Pruning.equivalent_only(),
                                                      Pruning.none()))
    assert full < evita < none


def test_equivalent_only_prunes_plans_but_never_an_or_node() -> None:
    space, stats = _q("Q5S")
    counters = DeclarativeOptimizer(space, Pruning.equivalent_only()).optimize(stats).counters
    assert counters.or_pruned == 0 and counters.and_pruned > 0
    assert counters.or_created == len(space.or_nodes())


def test_the_change_index_matches_space_affected() -> None:
    space, stats = _q("Q5S")
    opt = DeclarativeOptimizer(space, Pruning.none())
    opt.optimize(stats)
    assert opt.flow is not None
    for moved in ({("rows", "orders")}, {("selectivity", "c.c_custkey=o.o_custkey")},
                  {("ndv", "nation.n_regionkey")}, {("params", "cpu_row")}):
        mine = {a.alt for a in opt.flow._affected(set(moved))}
        assert mine == set(space.affected(moved))


def test_directions_of_literal_changes() -> None:
    space, stats = _q("Q5S")
    for change, expected in (({"rows": {"orders": 3e6}}, "up"),
                             ({"width": {"orders": 10}}, "down"),
                             ({"ndv": {"orders.o_custkey": 1e6}}, "down"),
                             ({"params": {"broadcast_limit": 1e3}}, "up"),
                             ({"rows": {"orders": 3e6}, "width": {"orders": 10}}, "mixed"),
                             ({"rows": {"orders": stats.rows("orders")}}, "none")):
        assert change_direction(space, stats, stats.changed(change)[0]) == expected, change


def test_a_single_relation_query_is_its_scan() -> None:
    query = QUERIES["Q3S"]
    one = type(query)({"c": "customer"}, (), name="one")
    result = DeclarativeOptimizer(SearchSpace(one)).optimize(tpch_stats())
    assert result.plan == {"scan": "c"}


def test_left_linear_and_no_properties_spaces() -> None:
    for options in (SpaceOptions(left_linear=True), SpaceOptions(properties=False)):
        space = SearchSpace(QUERIES["Q5S"], options)
        stats = tpch_stats()
        opt = DeclarativeOptimizer(space)
        assert_close(opt.optimize(stats).cost, best_plan(space, stats)[0])
        result = opt.reoptimize({"rows": {"customer": 1e4}})
        assert_close(result.cost, best_plan(space, opt.stats)[0])


def test_errors() -> None:
    space = fig21_space()
    with pytest.raises(ConfigError, match="reoptimize before optimize"):
        DeclarativeOptimizer(space).reoptimize({"rows": {"orders": 1.0}})
    with pytest.raises(ConfigError, match="unknown worklist order"):
        DeclarativeOptimizer(space, order="dfs")
    with pytest.raises(ConfigError, match="optimize first"):
        DeclarativeOptimizer(space).state_size()
