"""A store's deletions find the same entries whether they scan the dirty entries (a restored
store, CUDD) or go through the variable index, and a store indexes itself once scanning has
cost about as much as indexing would."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.engine.operators.store import SCANS_BEFORE_INDEX, ProvenanceStore
from aspen.provenance import ProvenanceManager

sys.path.insert(0, str(Path(__file__).parents[1] / "unit" / "provenance"))
import dd.cudd  # noqa: F401  (locked: a missing binding fails the tests, it is not skipped)
from provenance_testkit import VARS, build, exprs  # noqa: E402


def filled(entries: list, *, scanning: bool) -> tuple[ProvenanceManager, ProvenanceStore]:
    m = ProvenanceManager(backend="cudd")
    store = ProvenanceStore(m)
    assert store.scan is not None, "make setup builds the compiled scan"
    if not scanning:
        store.scan = None
    for i, expr in enumerate(entries):
        store.add((i,), build(m, expr))
    return m, store


def snapshot(m: ProvenanceManager, store: ProvenanceStore) -> dict:
    return {key: m.encode(f) for key, f in store.items()}


@settings(max_examples=60, deadline=None)
@given(entries=st.lists(exprs, min_size=1, max_size=12),
       deletions=st.lists(st.sets(st.sampled_from(VARS), max_size=2), min_size=1, max_size=6))
def test_scanning_and_indexing_restrict_the_same_entries(entries, deletions):
    scanned, by_index = filled(entries, scanning=True), filled(entries, scanning=False)
    for dead in deletions:
        changes = [sorted((key, m.encode(old), m.encode(new)) for key, old, new in
                          store.restrict(dead)) for m, store in (scanned, by_index)]
        assert changes[0] == changes[1]
        assert snapshot(*scanned) == snapshot(*by_index)
        m, store = scanned
        for _key, formula in store.items():  # nothing left mentions a dead variable
            assert not set(dead) & m.support(formula)


def test_a_restored_store_scans_a_few_deletions_then_indexes_itself():
    m, store = filled([("and", "p0", "p1"), ("or", "p2", "p3"), "p4", "p5", "p6"],
                      scanning=True)
    assert not store.mostly_indexed()
    for i in range(SCANS_BEFORE_INDEX):
        store.restrict({f"unknown{i}"} | ({"p4"} if i == 0 else set()))
        assert store.scans == i + 1 and not store.index  # scanned; nothing indexed
    assert (2,) not in store  # p4 died in the first scan
    store.restrict({"p5"})
    assert store.scans == 0 and store.mostly_indexed() and store.index  # indexed this time
    assert sorted(store) == [(0,), (1,), (4,)]  # p5's entry went too
