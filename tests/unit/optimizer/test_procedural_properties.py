"""Properties of the procedural re-optimizers on random join graphs, options, statistics and
sequences of (single or batched) changes: every variant equals the exhaustive optimum after
every call, with the same plan; the options change the work only; the top-down bounds are the
fixpoint of r1–r4.

Best-only versus memoize-all: the seed observes that both recompute the same nodes (Liu 2016,
§5.4). Here both follow the same control flow — the same OR nodes visited or searched, the same
pruning — but memoize-all *reads* the stored PlanCost of an alternative none of whose inputs
moved, where best-only recomputes it through its children; so the OR counts are equal and
memoize-all's AND count is at most best-only's (equal when every alternative read had changed,
as for the cardinality changes of test_procedural's analytic counts)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from join_graphs import assert_close, changes, join_graphs, method_subsets, stats_for

from aspen.optimizer.exhaustive import best_plan
from aspen.optimizer.procedural import BottomUp, TopDown
from aspen.optimizer.procedural.graph import AndOrGraph
from aspen.optimizer.result import Result
from aspen.optimizer.space import SearchSpace, SpaceOptions

VARIANTS = [(cls, memoize, conditional) for cls in (BottomUp, TopDown)
            for memoize in ("best", "all") for conditional in (True, False)]


def check_bounds(opt: TopDown) -> None:
    """r1–r4 recomputed from scratch: every node below an active one has the max of its active
    parents' bounds; active nodes are exact and within it; no other node would qualify."""
    g = opt.graph
    assert opt.active[g.root] and opt._solved(g.root)
    for c in range(len(g.nodes)):
        if c == g.root:
            continue
        live = [j for j in g.parents[c] if opt.active[g.and_parent[j]]]
        top = max((opt._parent_bound(j, c) for j in live), default=-math.inf)
        if live:
            assert opt.maxb[c] == top
        within = opt._solved(c) and opt._value(c) <= top
        assert opt.active[c] == within


def check_work(space: SearchSpace, results: dict[tuple, Result]) -> None:
    """The options change what is recomputed, within the rules above; nothing is counted
    beyond the space."""
    n_or, n_and = len(space.or_nodes()), len(space.and_nodes())
    for cls in (BottomUp, TopDown):
        base = results[cls, "best", False].counters
        for memoize in ("best", "all"):
            on, off = (results[cls, memoize, c].counters for c in (True, False))
            assert on.or_recomputed == off.or_recomputed
            assert on.and_recomputed <= off.and_recomputed
        for conditional in (True, False):
            best, full = (results[cls, m, conditional].counters for m in ("best", "all"))
            assert best.or_recomputed == full.or_recomputed
            assert full.and_recomputed <= best.and_recomputed
        for variant in [(cls, m, c) for m in ("best", "all") for c in (True, False)]:
            counters = results[variant].counters
            assert (counters.or_created, counters.and_created) == (
                base.or_created, base.and_created)
            assert (counters.or_pruned, counters.and_pruned) == (base.or_pruned, base.and_pruned)
            assert counters.or_created + counters.or_recomputed <= n_or
            assert counters.and_created + counters.and_recomputed <= n_and


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_every_variant_is_exact_after_every_change(data: st.DataObject) -> None:
    query = data.draw(join_graphs(max_size=6, max_clique=4))
    options = SpaceOptions(methods=data.draw(method_subsets()),
                           left_linear=data.draw(st.booleans()),
                           properties=data.draw(st.booleans()))
    space = SearchSpace(query, options)
    stats = data.draw(stats_for(query))
    optimizers = {v: v[0](space, memoize=v[1], conditional=v[2]) for v in VARIANTS}
    results = {v: o.optimize(stats) for v, o in optimizers.items()}
    for step in range(data.draw(st.integers(1, 4)) + 1):
        if step:
            change = data.draw(changes(query, stats))
            stats, _ = stats.changed(change)
            results = {v: o.reoptimize(change) for v, o in optimizers.items()}
        cost, plan = best_plan(space, stats)
        for variant, result in results.items():
            assert_close(result.cost, cost, variant[0].name)
            assert result.plan == plan, variant
        check_work(space, results)
        for optimizer in optimizers.values():
            if isinstance(optimizer, TopDown):
                check_bounds(optimizer)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_bottom_up_visits_only_superexpressions_of_the_change(data: st.DataObject) -> None:
    """The OR nodes a bottom-up call recomputes lie above an AND node the change affects, and
    the graph's stat index finds exactly the space's affected AND nodes."""
    query = data.draw(join_graphs(max_size=6, max_clique=4))
    options = SpaceOptions(methods=data.draw(method_subsets()),
                           properties=data.draw(st.booleans()))
    space = SearchSpace(query, options)
    stats = data.draw(stats_for(query))
    change = data.draw(changes(query, stats))
    _, moved = stats.changed(change)
    g = AndOrGraph(space)
    g.expand_all()
    affected = space.affected(moved)
    found = [g.and_nodes[j] for j in g.affected(moved)]
    assert len(found) == len(affected) and set(found) == set(affected)
    above = {alt.parent for alt in affected}
    todo = list(above)
    while todo:  # every ancestor of an affected AND node's OR node
        node = todo.pop()
        for parent in space.parents[node]:
            if parent.parent not in above:
                above.add(parent.parent)
                todo.append(parent.parent)
    optimizer = BottomUp(space, conditional=False)
    optimizer.optimize(stats)
    counters = optimizer.reoptimize(change).counters
    assert counters.or_recomputed <= len(above)
    assert counters.or_created == counters.and_created == 0
