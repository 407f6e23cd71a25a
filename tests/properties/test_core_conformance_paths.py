"""The path family on the compiled core and on the reference operators: one semantics.

After every batch of a random workload the in-process runtime on the compiled core
(:class:`~aspen.engine.native.NativePaths`, one kernel for the five views) and on the reference
operators (AggSel in front of the path Fixpoint) hold the same rows of every path-family view
and report the same row changes; the rows equal the from-scratch oracle; after a flush every
formula is the same BDD (one manager: canonical nodes). Eager mode compares the formulas after
every batch unflushed too (both are complete then). Two workloads: the shared one (5 nodes,
costs 0–3 so ties are common, replacements, renewals, expiries) and one on up to 8 nodes
where one link key holds instances with two costs at once. The core must be built
(``make setup``): without it these tests fail, they are not skipped.
"""

from __future__ import annotations

import pytest
from core_pairs import agree, final, pair, run_instances
from hypothesis import given, settings
from hypothesis import strategies as st
from prop_workloads import check_views, interpret, network_programs

from aspen.engine.batch import BaseFact, Batch
from aspen.runtime.local import LocalRuntime

VIEWS = ("min_cost", "min_hops", "cheapest_path", "fewest_hops", "shortest_cheapest_path")


@pytest.mark.parametrize("mode", ["lazy", "eager"])
@settings(max_examples=12, deadline=None)
@given(program=network_programs(max_batches=4, max_ops=4, setup=6),
       partitions=st.sampled_from([1, 4, 12]))
def test_path_views_agree_with_the_reference_and_the_oracle(mode, program, partitions):
    native, reference = pair(VIEWS, partitions, mode)
    before = None
    for step in interpret(program):
        deltas = native.apply(step.batch)
        ref_deltas = reference.apply(step.batch)
        agree(native, reference, deltas, ref_deltas, VIEWS, formulas=mode == "eager")
        before = check_views(native, step, VIEWS, before, deltas)
    final(native, reference, VIEWS)


_NODES = tuple(f"n{i}" for i in range(8))
_insert = st.tuples(st.sampled_from(_NODES), st.sampled_from(_NODES),
                    st.sampled_from([0.0, 1.0, 1.0, 2.0, 2.5]))
_batch = st.tuples(st.lists(_insert, max_size=5), st.lists(st.integers(0, 63), max_size=2))


@settings(max_examples=10, deadline=None)
@given(batches=st.lists(_batch, min_size=2, max_size=5),
       partitions=st.sampled_from([1, 4, 12]), mode=st.sampled_from(["lazy", "eager"]))
def test_two_costs_on_one_link_key_on_eight_nodes(batches, partitions, mode):
    run_instances(VIEWS, partitions, mode, batches,
                  lambda values, var: BaseFact("link", tuple(values), var))


@pytest.mark.parametrize(("first", "then"), [("reference", "native"), ("native", "reference")])
def test_a_path_state_written_by_one_core_is_maintained_by_the_other(first, then):
    links = [("a", "b", 1.0, "v1"), ("b", "c", 1.0, "v2"), ("c", "a", 1.0, "v3"),
             ("a", "c", 3.0, "v4")]
    rt = LocalRuntime(views=VIEWS, partitions=3, core=first)
    rt.apply(Batch(inserts=tuple(BaseFact("link", (s, d, c), v) for s, d, c, v in links)))
    rt.flush()
    loaded = LocalRuntime.load_state(rt.dump_state(), core=then)
    assert loaded.core == then and bool(loaded.native) == (then == "native")
    m = loaded.manager
    assert loaded.view("min_cost")[("a", "c", 2.0)] == m.var("v1") & m.var("v2")
    delta = loaded.apply(Batch(deletes=frozenset({"v2"})))
    loaded.flush()
    assert ("a", "c", 2.0) in delta["min_cost"].deleted
    assert ("a", "c", 3.0) in delta["min_cost"].inserted
    view = loaded.view("min_cost")
    assert view[("a", "c", 3.0)] == m.var("v4")  # promoted, with its whole formula
    assert set(view) == {("a", "b", 1.0), ("a", "c", 3.0), ("c", "a", 1.0), ("c", "b", 2.0)}
