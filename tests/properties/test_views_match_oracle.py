"""After every batch each maintained view equals from-scratch evaluation, in every mode.

Modes: eager / lazy MinShip; AggSel on, off and "single"; 1, 4 and 12 partitions; shuffled
arrival order. Workloads mix inserts, deletes, replacements, renewals (fresh variables) and
expirations of single instances (see prop_workloads).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prop_workloads import (
    check_hygiene,
    check_views,
    interpret,
    mixed_programs,
    network_programs,
    region_programs,
)

from aspen.runtime.local import LocalRuntime

K = 20.0
PATH_VIEWS = ("min_cost", "min_hops", "cheapest_path", "fewest_hops", "shortest_cheapest_path")
REGION_VIEWS = ("active_region", "region_sizes", "largest_regions")
ALL_VIEWS = ("reachable", *PATH_VIEWS, *REGION_VIEWS)

partitions = st.sampled_from([1, 4, 12])
shuffle_seeds = st.one_of(st.none(), st.integers(0, 2**16))


def run_and_check(program, views, *, mode, aggsel, partitions, shuffle_seed):
    """Apply every batch; after each, views = oracle, deltas = net change, hygiene holds."""
    rt = LocalRuntime(views=views, partitions=partitions, mode=mode, aggsel=aggsel,
                      shuffle_seed=shuffle_seed, k=K)
    before = {view: set() for view in views}
    for step in interpret(program):
        delta = rt.apply(step.batch)
        before = check_views(rt, step, views, before, delta, k=K)
        check_hygiene(rt, views, set(step.live))
        assert set(rt.live_vars) == set(step.live)
    rt.flush()
    check_views(rt, step, views, None, None, k=K)
    check_hygiene(rt, views, set(step.live))


@pytest.mark.parametrize("mode", ["eager", "lazy"])
@settings(max_examples=60, deadline=None)
@given(program=network_programs(), partitions=partitions, shuffle_seed=shuffle_seeds)
def test_reachable(mode, program, partitions, shuffle_seed):
    run_and_check(program, ("reachable",), mode=mode, aggsel=True, partitions=partitions,
                  shuffle_seed=shuffle_seed)


@pytest.mark.parametrize("aggsel", [True, False, "single"])
@pytest.mark.parametrize("mode", ["eager", "lazy"])
@settings(max_examples=25, deadline=None)
@given(program=network_programs(max_batches=5, max_ops=4), partitions=partitions,
       shuffle_seed=shuffle_seeds)
def test_shortest_path_family(mode, aggsel, program, partitions, shuffle_seed):
    # "single" selects on min cost only: the hop-based views cannot be built (plan.PlanChoices)
    views = ("min_cost", "cheapest_path") if aggsel == "single" else PATH_VIEWS
    run_and_check(program, views, mode=mode, aggsel=aggsel, partitions=partitions,
                  shuffle_seed=shuffle_seed)


@pytest.mark.parametrize("aggsel", [True, False, "single"])
@pytest.mark.parametrize("mode", ["eager", "lazy"])
@settings(max_examples=25, deadline=None)
@given(program=region_programs(), partitions=partitions, shuffle_seed=shuffle_seeds)
def test_region_family(mode, aggsel, program, partitions, shuffle_seed):
    run_and_check(program, REGION_VIEWS, mode=mode, aggsel=aggsel, partitions=partitions,
                  shuffle_seed=shuffle_seed)


@pytest.mark.parametrize("mode", ["eager", "lazy"])
@settings(max_examples=20, deadline=None)
@given(program=mixed_programs(max_batches=4),
       partitions=partitions, shuffle_seed=shuffle_seeds,
       aggsel=st.sampled_from([True, False]))
def test_all_views_together(mode, aggsel, program, partitions, shuffle_seed):
    run_and_check(program, ALL_VIEWS, mode=mode, aggsel=aggsel, partitions=partitions,
                  shuffle_seed=shuffle_seed)


@settings(max_examples=25, deadline=None)
@given(program=mixed_programs(max_batches=4))
def test_order_and_partition_independence(program):
    """Final views are the same for every partition count and arrival order (§7 item 18)."""
    steps = interpret(program)
    finals = []
    for parts, seed in [(1, None), (4, 1), (12, 2), (24, 3)]:
        rt = LocalRuntime(views=("reachable", "active_region"), partitions=parts, mode="lazy",
                          shuffle_seed=seed, k=K)
        for step in steps:
            rt.apply(step.batch)
        finals.append({v: set(rt.view(v)) for v in ("reachable", "active_region")})
    assert all(f == finals[0] for f in finals[1:])
