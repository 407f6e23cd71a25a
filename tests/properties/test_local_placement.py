"""The in-process runtime with its variable placement: the managers hold the placed order, and
the views and their provenance functions are those of a runtime that leaves the order to CUDD,
across a relabel, a dump/load round trip, and the load of a state written without a placement."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prop_workloads import (
    check_hygiene,
    check_meaning,
    check_views,
    interpret,
    mixed_programs,
    network_programs,
    region_programs,
)

from aspen.engine.batch import BaseFact, Batch
from aspen.provenance.bdd import ProvenanceManager
from aspen.runtime.local import LocalRuntime

K = 20.0
VIEWS = ("reachable", "min_cost", "active_region", "region_sizes")


def functions(rt: LocalRuntime, into: ProvenanceManager) -> dict:
    """Every view's tuples → its formula rebuilt in ``into`` (None for aggregates)."""
    out = {}
    for view in rt.views:
        for key, formula in rt.view(view).items():
            out[view, key] = None if formula is None else into.decode(rt.manager.encode(formula))
    return out


def assert_in_place(rt: LocalRuntime) -> None:
    """The manager's order, restricted to the live variables, is the placed order."""
    live = rt.live_vars
    assert set(rt.placement.order) == live
    assert [v for v in rt.manager.order if v in live] == rt.placement.order


def without_placement(state: bytes) -> bytes:
    """The same state as a runtime without placements wrote it."""
    payload = pickle.loads(state)
    del payload["placement"]
    return pickle.dumps(payload)


@settings(max_examples=30, deadline=None)
@given(program=st.one_of(network_programs(max_batches=4, max_ops=4, setup=6),
                         region_programs(max_batches=4, max_ops=4),
                         mixed_programs(max_batches=3, max_ops=4)),
       partitions=st.sampled_from([1, 3]), cut=st.integers(0, 4),
       old_state=st.booleans())
def test_placement_keeps_views_and_functions(program, partitions, cut, old_state):
    steps = interpret(program)
    rt = LocalRuntime(views=VIEWS, partitions=partitions, k=K, backend="cudd")
    reference = LocalRuntime(views=VIEWS, partitions=partitions, k=K, backend="cudd",
                             reorder=True)  # the order is CUDD's: no placement imposed
    common = ProvenanceManager("cudd")
    for i, step in enumerate(steps):
        rt.apply(step.batch)
        reference.apply(step.batch)
        rt.flush()
        reference.flush()
        assert_in_place(rt)
        check_views(rt, step, VIEWS, None, None, k=K)
        check_hygiene(rt, VIEWS, set(step.live))
        assert functions(rt, common) == functions(reference, common)
        if i == cut:  # relabel, then a dump/load round trip (maybe of a state of before)
            before = functions(rt, common)
            rt.relabel()
            assert rt.placement.order == rt.placement.ideal()
            assert_in_place(rt)
            assert functions(rt, common) == before
            state = rt.dump_state()
            rt = LocalRuntime.load_state(without_placement(state) if old_state else state)
            assert_in_place(rt)
            assert functions(rt, common) == before
    check_meaning(rt, steps[-1].live, ("reachable", "active_region"), k=K, cap=6)


@pytest.mark.parametrize("backend", ["cudd", "python"])
def test_a_state_without_placement_loads_and_is_placed(backend):
    # links arrive against the DFS order: arrival order and placement differ
    chain = [("e", "f"), ("d", "e"), ("c", "d"), ("b", "c"), ("a", "b"), ("f", "a")]
    rt = LocalRuntime(views=("reachable",), partitions=2, backend=backend)
    rt.apply(Batch(inserts=tuple(BaseFact("link", (s, d, 1.0), f"v{i}")
                                 for i, (s, d) in enumerate(chain))))
    rt.apply(Batch(inserts=(BaseFact("link", ("b", "x", 1.0), "v9"),),
                   deletes=frozenset({"v5"})))
    arrival = [f"v{i}" for i in (*range(len(chain)), 9)]
    rt.manager.set_order(arrival)  # what a runtime without placements held
    state = without_placement(rt.dump_state())
    loaded = LocalRuntime.load_state(state, backend=backend)
    assert loaded.placement.order == loaded.placement.ideal()
    assert_in_place(loaded)
    live_arrival = [v for v in arrival if v in loaded.live_vars]
    assert loaded.placement.order != live_arrival  # the load did move the variables
    common = ProvenanceManager(backend)
    assert functions(loaded, common) == functions(rt, common)
    # and it carries on: a new link goes right after its ideal predecessor
    for runtime in (rt, loaded):
        runtime.apply(Batch(inserts=(BaseFact("link", ("x", "y", 1.0), "v10"),)))
    assert_in_place(loaded)
    order = loaded.placement.order
    assert order[order.index("v10") - 1] == "v9"
    assert functions(loaded, common) == functions(rt, common)
    assert set(loaded.view("reachable")) == set(rt.view("reachable"))
