"""A batch applied ``exact`` (the compiled kernels derive eagerly, as the maintainer asks, since
it flushes every batch) gives what applying it lazily and flushing gives: the same rows with
the same formulas (one manager: canonical BDDs), nothing left buffered, on every view the
compiled core runs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from prop_workloads import interpret, network_programs

from aspen.provenance import ProvenanceManager
from aspen.runtime.local import LocalRuntime

VIEWS = ("reachable", "min_cost", "fewest_hops")


@settings(max_examples=25, deadline=None)
@given(program=network_programs(max_batches=4, max_ops=4, setup=6),
       partitions=st.sampled_from([1, 4]))
def test_an_exact_batch_equals_a_lazy_batch_then_a_flush(program, partitions):
    manager = ProvenanceManager(backend="cudd")
    exact, lazy = (LocalRuntime(views=VIEWS, partitions=partitions, mode="lazy",
                                manager=manager, core="native") for _ in range(2))
    assert set(exact.native) == set(VIEWS)
    for step in interpret(program):
        exact.apply(step.batch, deltas=False, exact=True)
        assert all(kernel.pending() == 0 for kernel in exact._kernels)
        lazy.apply(step.batch, deltas=False)
        lazy.flush()
        exact.flush()
        for view in VIEWS:
            assert dict(exact.view(view)) == dict(lazy.view(view)), view
