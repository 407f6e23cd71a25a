"""An answer row's formula, composed from its instrumented rows (:mod:`aspen.sqlprov.shape`).

A *unit* (one bag row of a node) is the AND of its parts that apply; a part is the AND of its
witnesses (a base tuple's variable, a view row's stored formula over base-tuple variables) and
of its groups: ``exists`` the OR of the group's units, ``not`` AND NOT that OR, ``atleast`` k
of them (a threshold function, built as a BDD). An answer row is the OR of its units (a
projection, DISTINCT, UNION: alternative derivations).

>>> from aspen.provenance.bdd import ProvenanceManager
>>> from aspen.sqlprov.shape import Group, Leaf, Part
>>> m = ProvenanceManager()
>>> c = Composer(m)
>>> rows = [{"p": "a", "u": 1, "q": "x", "mk": 1}, {"p": "a", "u": 1, "q": "y", "mk": 1},
...         {"p": "b", "u": 1, "q": None, "mk": None}]
>>> shape = (Part("p", (Leaf("p", "var"),)),
...          Part("u", groups=(Group("not", (Part("q", (Leaf("q", "var"),)),), "mk"),)))
>>> c.answer(rows, shape) == m.or_(m.and_(m.var("a"), ~m.or_(m.var("x"), m.var("y"))), m.var("b"))
True
>>> f = at_least(m, 2, [m.var("a"), m.var("b"), m.var("c")])
>>> [m.evaluate(f, s) for s in ({"a"}, {"a", "c"})]
[False, True]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.sqlprov.shape import Group, Leaf, Shape, identity

__all__ = ["Composer", "ViewFormulas", "at_least"]

Row = Mapping[str, Any]


def at_least(manager: ProvenanceManager, k: int, formulas: Sequence[Formula]) -> Formula:
    """True when at least ``k`` of ``formulas`` are (dynamic programming over the count: k·n
    BDD operations)."""
    if k <= 0:
        return manager.true
    # reach[j]: at least j of the formulas seen so far are true
    reach = [manager.true] + [manager.false] * k
    for f in formulas:
        for j in range(k, 0, -1):
            reach[j] = manager.or_(reach[j], manager.and_(f, reach[j - 1]))
    return reach[k]


class ViewFormulas:
    """A view row's stored formula in a manager, its instance variables (``v<seq>``) renamed to
    the base tuples they stand for (``names``; a variable not named there keeps its name);
    decoded once per distinct encoding."""

    def __init__(self, manager: ProvenanceManager, names: Mapping[str, str]) -> None:
        self.manager = manager
        self.names = names
        self._cache: dict[bytes, Formula] = {}

    def __call__(self, data: bytes) -> Formula:
        data = bytes(data)
        found = self._cache.get(data)
        if found is None:
            m = self.manager
            stored = m.decode(data)
            renames = {v: m.var(self.names[v]) for v in m.support(stored) if v in self.names}
            found = m.bdd.let(renames, stored) if renames else stored
            self._cache[data] = found
        return found


class Composer:
    """Composes formulas in ``manager``; ``views`` turns a view witness into its formula."""

    def __init__(self, manager: ProvenanceManager,
                 views: Callable[[bytes], Formula] | None = None) -> None:
        self.manager = manager
        self.views = views

    def leaf(self, leaf: Leaf, value: Any) -> Formula:
        if leaf.kind == "var":
            return self.manager.var(str(value))
        if self.views is None:
            raise ValueError("a view witness, but no view formulas to read it with")
        return self.views(value)

    def answer(self, rows: Sequence[Row], shape: Shape) -> Formula:
        """The OR of the units among ``rows``."""
        return self.manager.disj(self.unit(group, shape) for group in _units(rows, shape))

    def unit(self, rows: Sequence[Row], shape: Shape) -> Formula:
        """The formula of one unit (``rows`` agree on its identity)."""
        m = self.manager
        first = rows[0]
        out = m.true
        for part in shape:
            if first[part.present] is None:
                continue  # padding: the part belongs to another side of a union or join
            for leaf in part.ids:
                out = m.and_(out, self.leaf(leaf, first[leaf.column]))
            for group in part.groups:
                out = m.and_(out, self._group(rows, group))
                if m.is_false(out):
                    return out
        return out

    def _group(self, rows: Sequence[Row], group: Group) -> Formula:
        m = self.manager
        inner = [r for r in rows if r[group.marker] is not None]
        units = [self.unit(u, group.shape) for u in _units(inner, group.shape)]
        if group.kind == "exists":
            return m.disj(units)
        if group.kind == "not":
            return ~m.disj(units)
        return at_least(m, group.k, units)


def _units(rows: Sequence[Row], shape: Shape) -> list[list[Row]]:
    found: dict[tuple, list[Row]] = {}
    for row in rows:
        found.setdefault(identity(shape, row), []).append(row)
    return list(found.values())
