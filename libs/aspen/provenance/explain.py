"""Explanations read off monotone provenance formulas: witnesses, critical variables, what-if.

All functions take a :class:`~aspen.provenance.bdd.ProvenanceManager` and formulas of it, and
assume the formulas are **monotone** (built from variables with AND/OR only, as every Aspen
provenance formula is; :func:`is_monotone` checks it).

* :func:`minimal_witnesses` — the minimal sets of base variables that, alone true, make the
  formula true (its prime implicants). For ``reachable(x, y)`` these are the link sets of the
  simple paths no other path's links are a subset of; for a region tuple, the sensor chains.
* :func:`critical_variables` — the variables whose deletion alone kills the tuple.
* :func:`what_if` — which keys of a formula map would vanish if some variables were deleted,
  computed by restriction, never touching the stored formulas.

Example (Liu et al. 2008, Fig. 3, tuple ``reachable(B,B)``):

>>> from aspen.provenance.bdd import ProvenanceManager
>>> m = ProvenanceManager(backend="python")
>>> p1, p2, p3, p4 = (m.var(f"p{i}") for i in range(1, 5))
>>> bb = m.or_(m.and_(p2, p4), m.conj([p1, p2, p3]))
>>> [sorted(w) for w in minimal_witnesses(m, bb)]
[['p2', 'p4'], ['p1', 'p2', 'p3']]
>>> critical_variables(m, bb)
{'p2'}
>>> sorted(what_if(m, {"BB": bb, "CB": m.or_(p4, m.and_(p1, p3))}, ["p2"]))
['BB']
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.provenance.codec import node_list

__all__ = [
    "build_var_index",
    "critical_variables",
    "is_monotone",
    "minimal_witnesses",
    "what_if",
]

K = TypeVar("K", bound=Hashable)

Witness = frozenset[str]


def _witness_order(w: Witness) -> tuple[int, tuple[str, ...]]:
    return (len(w), tuple(sorted(w)))


def _families(
    names: list[str], nodes: list[tuple[int, int, int]], root: int, bound: int | None
) -> set[Witness]:
    """Minimal true sets (of size ≤ ``bound``) of every node, children first.

    For a node testing ``v`` with low child ``L`` (v false) and high child ``H`` (v true) of a
    monotone function (so ``L ≤ H``): ``min(f) = min(L) ∪ {{v} ∪ s : s ∈ min(H) \\ min(L)}``.
    A minimal set of ``L`` is minimal for ``f``; ``{v} ∪ s`` is minimal unless ``s`` already
    satisfies ``L``, which for a minimal ``s`` of ``H ≥ L`` means ``s ∈ min(L)``. Bounding every
    family by size keeps the recurrence exact, since ``s ∈ min(L)`` is decided on sets of the
    same size.
    """
    families: list[set[Witness]] = [set(), {frozenset()}]  # refs 0 = false, 1 = true
    for var_index, low, high in nodes:
        low_family, high_family = families[low], families[high]
        var = names[var_index]
        family = set(low_family)
        for s in high_family:
            if s in low_family or (bound is not None and len(s) >= bound):
                continue
            family.add(s | {var})
        families.append(family)
    return families[root]


def _size_range(nodes: list[tuple[int, int, int]], root: int) -> tuple[float, float]:
    """Fewest and most high edges on a root-to-true path: bounds on witness sizes."""
    inf = float("inf")
    least: list[float] = [inf, 0]
    most: list[float] = [-inf, 0]
    for _var, low, high in nodes:
        least.append(min(least[low], least[high] + 1))
        most.append(max(most[low], most[high] + 1))
    return least[root], most[root]


def minimal_witnesses(
    manager: ProvenanceManager, formula: Formula, limit: int | None = None
) -> list[Witness]:
    """The minimal variable sets that make a monotone ``formula`` true, smallest first.

    Computed bottom-up over the BDD's nodes with one family per node (memoized), not by trying
    subsets. Ties in size are ordered by their sorted variable names. With ``limit``, only the
    first ``limit`` witnesses in that order are computed: families are bounded by witness size
    and the bound is raised one at a time until enough witnesses are found (iterative
    deepening), so a formula with very many long witnesses is never expanded completely.
    ``false`` has no witness; ``true`` has one, the empty set.

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> a, b, c = m.var("a"), m.var("b"), m.var("c")
    >>> minimal_witnesses(m, m.or_(m.and_(a, b), c), limit=1)
    [frozenset({'c'})]
    """
    if limit is not None and limit <= 0:
        return []
    names, nodes, root = node_list(formula)
    if limit is None:
        found = _families(names, nodes, root, None)
    else:
        least, most = _size_range(nodes, root)
        if least == float("inf"):
            return []
        bound = int(least)
        while True:
            found = _families(names, nodes, root, bound)
            if len(found) >= limit or bound >= most:
                break
            bound += 1
    ordered = sorted(found, key=_witness_order)
    return ordered if limit is None else ordered[:limit]


def critical_variables(manager: ProvenanceManager, formula: Formula) -> set[str]:
    """Variables each of which, deleted alone, makes ``formula`` false.

    Tested by restriction: ``v`` is critical iff ``formula[v := false]`` is false. For a
    monotone formula this is the intersection of all minimal witnesses. A false formula has no
    critical variables (there is no tuple to kill).

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> a, b, c = m.var("a"), m.var("b"), m.var("c")
    >>> sorted(critical_variables(m, m.and_(a, m.or_(b, c))))
    ['a']
    """
    if manager.is_false(formula):
        return set()
    return {
        v
        for v in manager.support(formula)
        if manager.is_false(manager.restrict_false(formula, [v]))
    }


def build_var_index(manager: ProvenanceManager, formulas: Mapping[K, Formula]) -> dict[str, set[K]]:
    """Variable → keys whose formula mentions it (the index that lets a deletion touch few keys).

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> a, b = m.var("a"), m.var("b")
    >>> build_var_index(m, {"x": a, "y": m.and_(a, b)}) == {"a": {"x", "y"}, "b": {"y"}}
    True
    """
    index: dict[str, set[K]] = {}
    for key, formula in formulas.items():
        for var in manager.support(formula):
            index.setdefault(var, set()).add(key)
    return index


def what_if(
    manager: ProvenanceManager,
    formulas: Mapping[K, Formula],
    deleted: Iterable[str],
    index: Mapping[str, set[K]] | None = None,
) -> set[K]:
    """The keys whose formula would become false if the ``deleted`` variables were deleted.

    Each candidate formula is restricted (``deleted`` := false) into a new formula; the stored
    formulas are not modified. With ``index`` (from :func:`build_var_index`) only the keys that
    mention a deleted variable are examined; without it, every key. Keys whose formula is
    already false are not reported (they are not in the view).

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> a, b = m.var("a"), m.var("b")
    >>> fs = {"ab": m.and_(a, b), "a|b": m.or_(a, b)}
    >>> sorted(what_if(m, fs, ["a"], index=build_var_index(m, fs)))
    ['ab']
    """
    dead = set(deleted)
    if not dead:
        return set()
    if index is None:
        candidates: Iterable[K] = formulas.keys()
    else:
        touched: set[K] = set()
        for var in dead:
            touched |= index.get(var, set())
        candidates = touched
    gone: set[K] = set()
    for key in candidates:
        formula = formulas.get(key)
        if formula is None or manager.is_false(formula):
            continue
        if manager.is_false(manager.restrict_false(formula, dead)):
            gone.add(key)
    return gone


def is_monotone(manager: ProvenanceManager, formula: Formula) -> bool:
    """Whether ``formula`` is monotone: for every variable, ``f[v:=0] → f[v:=1]``.

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> a, b = m.var("a"), m.var("b")
    >>> is_monotone(m, m.or_(a, b)), is_monotone(m, m.and_(a, ~b))
    (True, False)
    """
    for var in manager.support(formula):
        low = manager.restrict(formula, {var: False})
        high = manager.restrict(formula, {var: True})
        if not manager.is_false(manager.and_(low, ~high)):
            return False
    return True
