"""Witnesses, critical variables and what-if on monotone formulas, against brute force."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provenance_testkit import BACKENDS, VARS, brute_minimal_true_sets, build, exprs, truth

from aspen.provenance.bdd import ProvenanceManager
from aspen.provenance.explain import (
    build_var_index,
    critical_variables,
    is_monotone,
    minimal_witnesses,
    what_if,
)

BACKEND_NAMES = ["cudd", "python"]


def fig3(m: ProvenanceManager) -> dict[str, object]:
    """Liu et al. 2008, Fig. 3 at fixpoint: link(A,B)=p1, (B,C)=p2, (C,A)=p3, (C,B)=p4."""
    p1, p2, p3, p4 = (m.var(f"p{i}") for i in range(1, 5))
    return {
        "AA": m.conj([p1, p2, p3]),
        "AB": p1,
        "AC": m.and_(p1, p2),
        "BA": m.and_(p2, p3),
        "BB": m.or_(m.and_(p2, p4), m.conj([p1, p2, p3])),
        "BC": p2,
        "CA": p3,
        "CB": m.or_(p4, m.and_(p1, p3)),
        "CC": m.or_(m.and_(p2, p4), m.conj([p1, p2, p3])),
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_fig3_witnesses_and_critical(backend):
    m = ProvenanceManager(backend=backend)
    bb = fig3(m)["BB"]
    assert minimal_witnesses(m, bb) == [frozenset({"p2", "p4"}), frozenset({"p1", "p2", "p3"})]
    assert minimal_witnesses(m, bb, limit=1) == [frozenset({"p2", "p4"})]
    assert critical_variables(m, bb) == {"p2"}
    assert critical_variables(m, fig3(m)["CB"]) == set()


@pytest.mark.parametrize("backend", BACKENDS)
def test_fig3_what_if_deleting_link_cb_removes_nothing(backend):
    m = ProvenanceManager(backend=backend)
    view = fig3(m)
    assert what_if(m, view, ["p4"]) == set()  # paper §4: deleting link(C,B) removes no tuple
    assert what_if(m, view, ["p2"]) == {"AA", "AC", "BA", "BB", "BC", "CC"}
    assert view["BB"] == fig3(m)["BB"]  # stored formulas untouched


@pytest.mark.parametrize("backend", BACKENDS)
def test_fig9_witnesses_are_the_paths(backend):
    m = ProvenanceManager(backend=backend)
    p = [m.var(f"p{i}") for i in range(8)]
    f = m.or_(
        m.and_(p[0], m.or_(p[1], m.and_(p[2], p[3]))),
        m.and_(m.or_(p[4], m.and_(p[6], p[7])), p[5]),
    )
    assert minimal_witnesses(m, f) == [
        frozenset({"p0", "p1"}),
        frozenset({"p4", "p5"}),
        frozenset({"p0", "p2", "p3"}),
        frozenset({"p5", "p6", "p7"}),
    ]
    assert critical_variables(m, f) == set()


@pytest.mark.parametrize("backend", BACKENDS)
def test_constants(backend):
    m = ProvenanceManager(backend=backend)
    assert minimal_witnesses(m, m.false) == []
    assert minimal_witnesses(m, m.true) == [frozenset()]
    assert minimal_witnesses(m, m.false, limit=3) == []
    assert minimal_witnesses(m, m.var("a"), limit=0) == []
    assert critical_variables(m, m.false) == set() and critical_variables(m, m.true) == set()


@settings(max_examples=60, deadline=None)
@given(expr=exprs, backend=st.sampled_from(BACKEND_NAMES), order=st.permutations(VARS))
def test_witnesses_and_critical_match_brute_force(expr, backend, order):
    m = ProvenanceManager(backend=backend)
    m.set_order(list(order))
    f = build(m, expr)
    assert is_monotone(m, f)
    expected = brute_minimal_true_sets(expr)
    found = minimal_witnesses(m, f)
    assert set(found) == expected and len(found) == len(expected)
    assert [len(w) for w in found] == sorted(len(w) for w in found)
    for limit in (1, 2, 3):
        assert minimal_witnesses(m, f, limit=limit) == found[:limit]
    critical = critical_variables(m, f)
    assert critical == (frozenset.intersection(*found) if found else set())
    for v in critical:  # each critical variable alone kills the tuple
        assert not truth(expr, frozenset(VARS) - {v})


@settings(max_examples=40, deadline=None)
@given(
    view=st.dictionaries(st.integers(0, 9), exprs, min_size=1, max_size=6),
    deleted=st.sets(st.sampled_from(VARS), max_size=3),
    backend=st.sampled_from(BACKEND_NAMES),
)
def test_what_if_matches_brute_force(view, deleted, backend):
    m = ProvenanceManager(backend=backend)
    formulas = {k: build(m, e) for k, e in view.items()}
    live = frozenset(VARS) - deleted
    expected = {k for k, e in view.items() if truth(e, frozenset(VARS)) and not truth(e, live)}
    index = build_var_index(m, formulas)
    assert what_if(m, formulas, deleted) == expected
    assert what_if(m, formulas, deleted, index=index) == expected
    assert all(formulas[k] == build(m, e) for k, e in view.items())


def test_what_if_with_index_examines_only_indexed_keys():
    m = ProvenanceManager(backend="python")
    a, b = m.var("a"), m.var("b")
    formulas = {"x": a, "y": b}
    # a deliberately incomplete index: only the keys it lists are examined
    assert what_if(m, formulas, ["a"], index={"a": set()}) == set()
    assert what_if(m, formulas, ["a"], index={"a": {"x"}}) == {"x"}
    assert build_var_index(m, formulas) == {"a": {"x"}, "b": {"y"}}


def test_is_monotone_rejects_negation():
    m = ProvenanceManager(backend="python")
    a, b = m.var("a"), m.var("b")
    assert not is_monotone(m, m.or_(a, ~b))
    assert is_monotone(m, m.and_(a, b))
