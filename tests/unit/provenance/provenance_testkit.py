"""Shared test helpers: random monotone expression trees and their brute-force semantics."""

from __future__ import annotations

from itertools import combinations

from hypothesis import strategies as st

from aspen.provenance.bdd import ProvenanceManager

VARS = [f"p{i}" for i in range(7)]

#: Both backends (``dd.cudd`` is locked: a missing binding fails, it is not skipped).
BACKENDS = ["cudd", "python"]

#: A monotone expression: a variable name, or ("and"|"or", left, right).
exprs = st.recursive(
    st.sampled_from(VARS),
    lambda inner: st.tuples(st.sampled_from(["and", "or"]), inner, inner),
    max_leaves=12,
)


def build(m: ProvenanceManager, expr):
    if isinstance(expr, str):
        return m.var(expr)
    op, left, right = expr
    a, b = build(m, left), build(m, right)
    return m.and_(a, b) if op == "and" else m.or_(a, b)


def truth(expr, true_vars: frozenset[str]) -> bool:
    if isinstance(expr, str):
        return expr in true_vars
    op, left, right = expr
    if op == "and":
        return truth(left, true_vars) and truth(right, true_vars)
    return truth(left, true_vars) or truth(right, true_vars)


def subsets(names):
    names = sorted(names)
    for k in range(len(names) + 1):
        for combo in combinations(names, k):
            yield frozenset(combo)


def brute_minimal_true_sets(expr) -> set[frozenset[str]]:
    """Minimal true sets by trying every subset (monotone: dropping one element suffices)."""
    found = set()
    for s in subsets(VARS):
        if truth(expr, s) and not any(truth(expr, s - {v}) for v in s):
            found.add(s)
    return found
