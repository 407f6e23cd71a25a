"""DRed, relative provenance and absorption (eager and lazy) give identical views after every
batch of the same workload, and all equal the oracle."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from prop_workloads import check_views, interpret, mixed_programs

from aspen.baselines.dred import DRedRuntime
from aspen.baselines.relative import RelativeRuntime
from aspen.runtime.local import LocalRuntime

K = 20.0
VIEWS = ("reachable", "active_region")


@settings(max_examples=40, deadline=None)
@given(program=mixed_programs(),
       partitions=st.sampled_from([1, 4, 12]))
def test_dred_relative_and_absorption_agree(program, partitions):
    runtimes = {
        "dred": DRedRuntime(views=VIEWS, partitions=partitions, k=K),
        "relative": RelativeRuntime(views=VIEWS, partitions=partitions, k=K),
        "eager": LocalRuntime(views=VIEWS, partitions=partitions, mode="eager", k=K),
        "lazy": LocalRuntime(views=VIEWS, partitions=partitions, mode="lazy", k=K),
    }
    for step in interpret(program):
        seen = {}
        for name, rt in runtimes.items():
            rt.apply(step.batch)
            seen[name] = {view: set(rt.view(view)) for view in VIEWS}
        assert all(views == seen["dred"] for views in seen.values()), seen
        check_views(runtimes["dred"], step, VIEWS, None, None, k=K)
