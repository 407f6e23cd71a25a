"""The region family on the compiled core and on the reference operators: one semantics.

After every batch of a random sensor workload the in-process runtime on the compiled core
(:class:`~aspen.engine.native.NativeRegions`: the closure kernel in targets mode, the counts
read from its rows) and on the reference operators hold the same rows of ``active_region``,
``region_sizes`` and ``largest_regions``, on the same nodes, and report the same row changes;
the rows equal the from-scratch oracle; after a flush every formula is the same BDD (one
manager: canonical nodes). Eager mode compares the formulas after every batch unflushed too.
Two workloads: the shared one (five sensors on a small grid where distances of exactly k occur,
replacements, renewals, expiries) and one where a sensor key holds live instances at two
positions at once and triggers and seeds have several instances. A state either core wrote is
maintained by the other. The core must be built (``make setup``): without it these tests fail,
they are not skipped.
"""

from __future__ import annotations

import pytest
from core_pairs import agree, final, pair, run_instances
from hypothesis import given, settings
from hypothesis import strategies as st
from prop_workloads import COORDS, check_views, interpret, region_programs

from aspen.engine.batch import BaseFact, Batch
from aspen.runtime.local import LocalRuntime

VIEWS = ("active_region", "region_sizes", "largest_regions")


@pytest.mark.parametrize("mode", ["lazy", "eager"])
@settings(max_examples=25, deadline=None)
@given(program=region_programs(max_batches=5, max_ops=5),
       partitions=st.sampled_from([1, 4, 12]))
def test_region_views_agree_with_the_reference_and_the_oracle(mode, program, partitions):
    native, reference = pair(VIEWS, partitions, mode)
    before = None
    for step in interpret(program):
        deltas = native.apply(step.batch)
        ref_deltas = reference.apply(step.batch)
        agree(native, reference, deltas, ref_deltas, VIEWS, formulas=mode == "eager",
              placement=True)
        before = check_views(native, step, VIEWS, before, deltas)
    final(native, reference, VIEWS)


_SENSORS = tuple(f"s{i}" for i in range(6))
_fact = st.one_of(
    st.tuples(st.just("sensor"), st.sampled_from(_SENSORS), st.sampled_from(COORDS),
              st.sampled_from(COORDS)),
    st.tuples(st.just("triggered"), st.sampled_from(_SENSORS)),
    st.tuples(st.just("region_seed"), st.sampled_from(("r1", "r2", "r3")),
              st.sampled_from(_SENSORS)),
)
_batch = st.tuples(st.lists(_fact, max_size=8), st.lists(st.integers(0, 63), max_size=3))


@settings(max_examples=25, deadline=None)
@given(batches=st.lists(_batch, min_size=2, max_size=5),
       partitions=st.sampled_from([1, 4, 12]), mode=st.sampled_from(["lazy", "eager"]))
def test_several_instances_and_positions_of_one_key(batches, partitions, mode):
    def fact(values: tuple, var: str) -> BaseFact:
        relation, *rest = values
        if relation == "sensor":
            rest = [rest[0], float(rest[1]), float(rest[2])]
        return BaseFact(relation, tuple(rest), var)

    run_instances(VIEWS, partitions, mode, batches, fact, placement=True)


@pytest.mark.parametrize(("first", "then"), [("reference", "native"), ("native", "reference")])
def test_a_region_state_written_by_one_core_is_maintained_by_the_other(first, then):
    facts = [BaseFact("sensor", ("a", 0.0, 0.0), "v1"), BaseFact("sensor", ("b", 10.0, 0.0), "v2"),
             BaseFact("sensor", ("c", 20.0, 0.0), "v3"), BaseFact("triggered", ("a",), "v4"),
             BaseFact("triggered", ("b",), "v5"), BaseFact("triggered", ("c",), "v6"),
             BaseFact("region_seed", ("r", "a"), "v7"), BaseFact("region_seed", ("q", "c"), "v8")]
    rt = LocalRuntime(views=VIEWS, partitions=3, core=first)
    rt.apply(Batch(inserts=tuple(facts)))
    rt.flush()
    loaded = LocalRuntime.load_state(rt.dump_state(), core=then)
    assert loaded.core == then and bool(loaded.native) == (then == "native")
    m = loaded.manager
    v = {name: m.var(name) for name in ("v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8")}
    assert loaded.view("active_region")[("r", "c")] == m.conj(v[f"v{i}"] for i in range(1, 8))
    assert set(loaded.view("largest_regions")) == {("r", 3), ("q", 3)}
    delta = loaded.apply(Batch(deletes=frozenset({"v5"}),
                               inserts=(BaseFact("sensor", ("d", 30.0, 0.0), "v9"),)))
    loaded.flush()
    assert delta["active_region"].deleted == {("r", "b"), ("r", "c"), ("q", "b"), ("q", "a")}
    assert delta["region_sizes"].inserted == {("r", 1), ("q", 1)}
    assert delta["largest_regions"].deleted == {("r", 3), ("q", 3)}
    view = loaded.view("active_region")
    assert set(view) == {("r", "a"), ("q", "c")}
    assert view[("q", "c")] == v["v8"] & v["v6"] & v["v3"]
