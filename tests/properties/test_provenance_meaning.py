"""Provenance by meaning: a formula evaluated on a subset S of the live variables is true iff
the tuple is in the view computed from scratch over the facts of S."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prop_workloads import (
    check_hygiene,
    check_meaning,
    check_views,
    interpret,
    network_programs,
    region_programs,
)

from aspen.runtime.local import LocalRuntime

K = 20.0


def run_then_check_meaning(program, views, mode, partitions, shuffle_seed):
    rt = LocalRuntime(views=views, partitions=partitions, mode=mode, shuffle_seed=shuffle_seed,
                      k=K)
    steps = interpret(program)
    for step in steps:
        rt.apply(step.batch)
        check_hygiene(rt, views, set(step.live))
    rt.flush()
    check_views(rt, steps[-1], views, None, None, k=K)
    check_hygiene(rt, views, set(steps[-1].live))
    check_meaning(rt, steps[-1].live, views, k=K)


@pytest.mark.parametrize("mode", ["eager", "lazy"])
@settings(max_examples=40, deadline=None)
@given(program=network_programs(max_batches=3, max_ops=3, setup=6),
       partitions=st.sampled_from([1, 4, 12]), shuffle_seed=st.one_of(st.none(), st.integers()))
def test_reachable_formulas_mean_derivability(mode, program, partitions, shuffle_seed):
    run_then_check_meaning(program, ("reachable",), mode, partitions, shuffle_seed)


@pytest.mark.parametrize("mode", ["eager", "lazy"])
@settings(max_examples=40, deadline=None)
@given(program=region_programs(max_batches=3, max_ops=3),
       partitions=st.sampled_from([1, 4, 12]), shuffle_seed=st.one_of(st.none(), st.integers()))
def test_region_formulas_mean_derivability(mode, program, partitions, shuffle_seed):
    run_then_check_meaning(program, ("active_region",), mode, partitions, shuffle_seed)


FIG3 = [("A", "B", "p1"), ("B", "C", "p2"), ("C", "A", "p3"), ("C", "B", "p4")]


@pytest.mark.parametrize("mode", ["eager", "lazy"])
@pytest.mark.parametrize("partitions", [1, 3, 12])
def test_fig3_formulas_and_deleting_cb(mode, partitions):
    """The worked example of Liu et al. 2008, Figs. 2-3 (§3.1) and deleting link(C,B) (§4)."""
    from aspen.engine.batch import BaseFact, Batch

    rt = LocalRuntime(views=("reachable",), partitions=partitions, mode=mode, k=K)
    rt.apply(Batch(inserts=tuple(BaseFact("link", (s, d, 1.0), v) for s, d, v in FIG3)))
    rt.flush()
    m = rt.manager
    p1, p2, p3, p4 = (m.var(v) for v in ("p1", "p2", "p3", "p4"))
    p123 = m.conj([p1, p2, p3])
    expected = {
        ("A", "A"): p123, ("A", "B"): p1, ("A", "C"): m.and_(p1, p2),
        ("B", "A"): m.and_(p2, p3), ("B", "B"): m.or_(m.and_(p2, p4), p123), ("B", "C"): p2,
        ("C", "A"): p3, ("C", "B"): m.or_(p4, m.and_(p1, p3)),
        ("C", "C"): m.or_(m.and_(p2, p4), p123),
    }
    assert dict(rt.view("reachable")) == expected
    delta = rt.apply(Batch(deletes=frozenset({"p4"})))
    assert not delta["reachable"].deleted and not delta["reachable"].inserted
    rt.flush()
    view = dict(rt.view("reachable"))
    assert view[("B", "B")] == p123 and view[("C", "C")] == p123
    assert view[("C", "B")] == m.and_(p1, p3)
