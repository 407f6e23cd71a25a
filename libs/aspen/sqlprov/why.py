"""Why an answer row holds: its minimal witness sets and its critical base tuples.

A witness set is a set of base tuples that, alone present, derive the row; the minimal ones are
read off the BDD (:func:`aspen.provenance.explain.minimal_witnesses`). A formula with negation
is first closed upwards (``U(f)(S)`` = some subset of S satisfies f), whose minimal sets are
exactly f's. A tuple is critical when deleting it alone, all others kept, removes the row.

>>> from aspen.provenance.bdd import ProvenanceManager
>>> m = ProvenanceManager()
>>> a, b, c = m.var("a"), m.var("b"), m.var("c")
>>> w = why(m, m.or_(a, m.and_(b, ~c)))  # derived by a, or by b without c
>>> w.witnesses, w.critical
([['a'], ['b']], ['a'])
>>> why(m, m.and_(a, m.or_(b, c))).critical
['a']
"""

from __future__ import annotations

from dataclasses import dataclass

from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.provenance.codec import node_list
from aspen.provenance.explain import critical_variables, is_monotone, minimal_witnesses

__all__ = ["Why", "upward_closure", "why"]


@dataclass(frozen=True)
class Why:
    """Minimal witness sets (each sorted; smallest first), critical tuples, whether the list of
    witnesses was cut at the limit."""

    witnesses: list[list[str]]
    critical: list[str]
    truncated: bool = False


def upward_closure(manager: ProvenanceManager, formula: Formula) -> Formula:
    """The least monotone formula above ``formula``: ``U(L) ∨ (v ∧ U(H))`` per node.

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager()
    >>> a, b = m.var("a"), m.var("b")
    >>> upward_closure(m, m.and_(a, ~b)) == a
    True
    """
    names, nodes, root = node_list(formula)
    built: list[Formula] = [manager.false, manager.true]
    for var, low, high in nodes:
        built.append(manager.or_(built[low], manager.and_(manager.var(names[var]), built[high])))
    return built[root]


def why(manager: ProvenanceManager, formula: Formula, limit: int | None = None) -> Why:
    """The explanation of a row whose formula is ``formula`` (every variable true now)."""
    monotone = is_monotone(manager, formula)
    closed = formula if monotone else upward_closure(manager, formula)
    found = minimal_witnesses(manager, closed, None if limit is None else limit + 1)
    truncated = limit is not None and len(found) > limit
    witnesses = [sorted(w) for w in (found[:limit] if limit is not None else found)]
    if monotone:
        critical = critical_variables(manager, formula)
    else:
        support = manager.support(formula)
        critical = {v for v in support if not manager.evaluate(formula, support - {v})}
    return Why(witnesses, sorted(critical), truncated)
