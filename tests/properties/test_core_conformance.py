"""One semantics, two implementations: the compiled core and the reference operators.

After every batch of a random workload (inserts, replacements, renewals, deletions), the
in-process runtime on the compiled core and on the reference operators hold the same view
tuples and, once the reference is flushed, the same formula for every tuple (one BDD manager:
canonical BDDs, so equal formulas are the same node). The views also equal the from-scratch
oracle, on 1, 4 and 12 partitions, lazy and eager. A state written by one core is maintained by
the other.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prop_workloads import check_views, interpret, network_programs

from aspen.engine.batch import BaseFact, Batch
from aspen.provenance import ProvenanceManager
from aspen.runtime.local import LocalRuntime

VIEWS = ("reachable", "min_cost")


def _pair(partitions: int, mode: str) -> tuple[LocalRuntime, LocalRuntime]:
    manager = ProvenanceManager(backend="cudd")
    native = LocalRuntime(views=VIEWS, partitions=partitions, mode=mode, manager=manager,
                          core="native")
    reference = LocalRuntime(views=VIEWS, partitions=partitions, mode=mode, manager=manager,
                             core="reference")
    return native, reference


def test_the_compiled_core_runs_both_views_and_the_reference_none():
    native, reference = _pair(4, "lazy")
    assert native.core == "native" and set(native.native) == {"reachable", "min_cost"}
    assert not any(name.startswith(("reachable.", "path.")) for name in native.nodes[0])
    assert reference.core == "reference" and not reference.native
    assert "reachable.fix" in reference.nodes[0] and "path.fix" in reference.nodes[0]


@pytest.mark.parametrize("mode", ["lazy", "eager"])
@settings(max_examples=40, deadline=None)
@given(program=network_programs(max_batches=4, max_ops=4, setup=6),
       partitions=st.sampled_from([1, 4, 12]))
def test_native_and_reference_agree_after_every_batch(mode, program, partitions):
    native, reference = _pair(partitions, mode)
    before = None
    for step in interpret(program):
        deltas = native.apply(step.batch)
        reference_deltas = reference.apply(step.batch)
        native.flush()
        reference.flush()
        for view in VIEWS:
            assert dict(native.view(view)) == dict(reference.view(view)), view
        assert deltas["reachable"].inserted == reference_deltas["reachable"].inserted
        assert deltas["reachable"].deleted == reference_deltas["reachable"].deleted
        before = check_views(native, step, VIEWS, before, deltas)


@pytest.mark.parametrize(("first", "then"), [("reference", "native"), ("native", "reference")])
def test_a_state_written_by_one_core_is_maintained_by_the_other(first, then):
    links = [("a", "b", "v1"), ("b", "c", "v2"), ("c", "a", "v3"), ("c", "d", "v4")]
    rt = LocalRuntime(views=VIEWS, partitions=3, core=first)
    rt.apply(Batch(inserts=tuple(BaseFact("link", (s, d, 1.0), v) for s, d, v in links)))
    rt.flush()
    loaded = LocalRuntime.load_state(rt.dump_state(), core=then)
    assert loaded.core == then
    m = loaded.manager
    assert loaded.view("reachable")[("a", "d")] == m.conj([m.var(v) for v in ("v1", "v2", "v4")])
    delta = loaded.apply(Batch(deletes=frozenset({"v2"}),
                               inserts=(BaseFact("link", ("a", "c", 1.0), "v5"),)))
    loaded.flush()
    assert ("b", "c") in delta["reachable"].deleted
    view = loaded.view("reachable")
    assert ("b", "c") not in view
    assert view[("a", "d")] == m.and_(m.var("v5"), m.var("v4"))
    assert set(view) == {("a", "c"), ("a", "d"), ("a", "a"), ("a", "b"), ("c", "a"),
                         ("c", "b"), ("c", "c"), ("c", "d")}
