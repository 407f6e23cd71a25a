"""DRed and relative provenance alone (no engine) against from-scratch evaluation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from prop_workloads import check_views, interpret, mixed_programs

from aspen.baselines.dred import DRedRuntime
from aspen.baselines.relative import RelativeRuntime

K = 20.0
VIEWS = ("reachable", "active_region")


@settings(max_examples=80, deadline=None)
@given(program=mixed_programs(max_batches=8),
       partitions=st.sampled_from([1, 4, 12]))
def test_dred_and_relative_match_the_oracle(program, partitions):
    """Runs without the engine: the baselines alone against from-scratch evaluation."""
    dred = DRedRuntime(views=VIEWS, partitions=partitions, k=K)
    rel = RelativeRuntime(views=VIEWS, partitions=partitions, k=K)
    before_d = before_r = {view: set() for view in VIEWS}
    for step in interpret(program):
        before_d = check_views(dred, step, VIEWS, before_d, dred.apply(step.batch), k=K)
        before_r = check_views(rel, step, VIEWS, before_r, rel.apply(step.batch), k=K)
