"""An answer row's formula, composed from its instrumented rows (:mod:`aspen.sqlprov.shape`).

A *unit* (one bag row of a node) is the AND of its parts that apply; a part is the AND of its
witnesses (a base tuple's variable, a view row's stored formula over base-tuple variables) and
of its groups: ``exists`` the OR of the group's units, ``not`` AND NOT that OR, ``atleast`` k
of them (a threshold function, built as a BDD). An answer row is the OR of its units (a
projection, DISTINCT, UNION: alternative derivations).

A group's formula is built once per distinct set of rows and reused by every outer row whose
group has those rows (a correlated subquery's group, one per correlation key);
:meth:`Composer.declare` declares every variable of an answer up front, each unit's next to
each other (units sorted by their identity; the units of groups under a level without
variables merged across answers, so a tuple shared by two answers' groups keeps its variables
together), so that OR-of-AND and threshold formulas stay small, and decodes the view witnesses
in bulk; :func:`aspen.sqlprov.run.compose` keeps CUDD from reordering them meanwhile.

>>> from aspen.provenance.bdd import ProvenanceManager
>>> from aspen.sqlprov.shape import Group, Leaf, Part
>>> m = ProvenanceManager()
>>> c = Composer(m)
>>> rows = [{"p": "a", "u": 1, "q": "x", "mk": 1}, {"p": "a", "u": 1, "q": "y", "mk": 1},
...         {"p": "b", "u": 1, "q": None, "mk": None}]
>>> shape = (Part("p", (Leaf("p", "var"),)),
...          Part("u", groups=(Group("not", (Part("q", (Leaf("q", "var"),)),), "mk"),)))
>>> c.declare([rows], shape)
>>> c.answer(rows, shape) == m.or_(m.and_(m.var("a"), ~m.or_(m.var("x"), m.var("y"))), m.var("b"))
True
>>> f = at_least(m, 2, [m.var("a"), m.var("b"), m.var("c")])
>>> [m.evaluate(f, s) for s in ({"a"}, {"a", "c"})]
[False, True]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.provenance.codec import read_names
from aspen.sqlprov.shape import Group, Leaf, Part, Shape, columns, identity, identity_of_values

__all__ = ["Composer", "ViewFormulas", "any_of", "at_least", "values_key"]

Row = Mapping[str, Any]


def at_least(manager: ProvenanceManager, k: int, formulas: Sequence[Formula]) -> Formula:
    """True when at least ``k`` of ``formulas`` are: the counts of the two halves combined
    (at least j of both iff at least i of one and j - i of the other), halves merged pairwise
    so that no partial result is rebuilt once per formula (k·n BDD operations at most)."""
    if k <= 0:
        return manager.true
    if not formulas:
        return manager.false
    return _counts(manager, k, list(formulas))[k]


def _counts(m: ProvenanceManager, k: int, formulas: list[Formula]) -> list[Formula]:
    """``out[j]``: at least j of ``formulas`` are true, for j in 0..k."""
    if len(formulas) == 1:
        return [m.true, formulas[0]] + [m.false] * (k - 1)
    half = len(formulas) // 2
    a, b = _counts(m, k, formulas[:half]), _counts(m, k, formulas[half:])
    cap_a, cap_b = min(half, k), min(len(formulas) - half, k)
    out = [m.true] + [m.false] * k
    for j in range(1, k + 1):
        acc = m.false
        for i in range(max(0, j - cap_b), min(j, cap_a) + 1):
            acc = m.or_(acc, m.and_(a[i], b[j - i]))
        out[j] = acc
    return out


#: ``any_of`` calls its ``check`` after each level of at least this many formulas.
CHECK_LEVELS_FROM = 16


def any_of(manager: ProvenanceManager, formulas: Iterable[Formula],
           check: Callable[[], None] | None = None) -> Formula:
    """The OR of ``formulas``, merged pairwise: OR-ing many small formulas one by one into a
    growing result walks that result each time (quadratic); pairwise, each level once.
    ``check`` is called after each large level (:data:`CHECK_LEVELS_FROM`).

    >>> m = ProvenanceManager(backend="python")
    >>> any_of(m, [m.var("a"), m.var("b"), m.var("c")]) == m.disj([m.var(n) for n in "abc"])
    True
    """
    level = list(formulas)
    if not level:
        return manager.false
    while len(level) > 1:
        pairs = [manager.or_(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = pairs + level[len(level) - len(level) % 2:]
        if check is not None and len(level) >= CHECK_LEVELS_FROM:
            check()
    return level[0]


class ViewFormulas:
    """A view row's stored formula in a manager, its instance variables (``v<seq>``) renamed to
    the base tuples they stand for (``names``; a variable not named there keeps its name);
    decoded once per distinct encoding, many at once with :meth:`prefetch`."""

    def __init__(self, manager: ProvenanceManager, names: Mapping[str, str]) -> None:
        self.manager = manager
        self.names = names
        self._cache: dict[bytes, Formula] = {}

    def variables(self, data: bytes) -> list[str]:
        """The base-tuple names of the encoding's variables, in its listed order (read from
        its header, nothing decoded)."""
        listed, _ = read_names(bytes(data), 1)
        return [self.names.get(v, v) for v in listed]

    def prefetch(self, encodings: Iterable[bytes]) -> None:
        """Decode the new ones of ``encodings`` in one bulk call (the codec's compiled loop)."""
        new = list(dict.fromkeys(b for b in map(bytes, encodings) if b not in self._cache))
        if new:
            for data, stored in zip(new, self.manager.decode_each(new), strict=True):
                self._cache[data] = self._renamed(stored)

    def __call__(self, data: bytes) -> Formula:
        data = bytes(data)
        found = self._cache.get(data)
        if found is None:
            found = self._cache[data] = self._renamed(self.manager.decode(data))
        return found

    def _renamed(self, stored: Formula) -> Formula:
        m = self.manager
        renames = {v: m.var(self.names[v]) for v in m.support(stored) if v in self.names}
        return m.bdd.let(renames, stored) if renames else stored


class Composer:
    """Composes formulas in ``manager``; ``views`` turns a view witness into its formula.
    With ``memo`` (the default) a group's formula is built once per distinct set of rows;
    ``built`` counts the group formulas built; ``check`` is called as large ORs grow (see
    :func:`any_of`)."""

    def __init__(self, manager: ProvenanceManager,
                 views: Callable[[bytes], Formula] | None = None, memo: bool = True,
                 check: Callable[[], None] | None = None) -> None:
        self.manager = manager
        self.views = views
        self.memo = memo
        self.check = check
        self.built = 0
        self._groups: dict[tuple, Formula] = {}
        self._columns: dict[int, tuple[str, ...]] = {}
        self._vars: dict[str, Formula] = {}

    def declare(self, answers: Iterable[Sequence[Row]], shape: Shape,
                order_variables: bool = True) -> None:
        """Declare the variables of every answer's rows (``answers``: each answer row's
        witnesses) in structural order — answer by answer, units sorted by identity, a unit's
        witnesses and groups depth first; where a level has no variables of its own (a group,
        a DISTINCT), its groups' units merged over all its units and answers first — and
        decode their view witnesses in bulk. Formulas stay the same functions; only their size
        changes. Without ``order_variables`` only the view witnesses are decoded (the
        variables come in as rows are composed)."""
        names: dict[str, None] = {}
        encodings: dict[bytes, None] = {}
        seen: set[tuple] = set()

        def leaves(first: Row, part: Part) -> None:
            for leaf in part.ids:
                value = first[leaf.column]
                if leaf.kind == "var":
                    names[str(value)] = None
                elif value is not None and isinstance(self.views, ViewFormulas):
                    encodings[bytes(value)] = None  # its variables: as the bulk decode lays them

        def fresh(inner: list[Row], group: Group) -> bool:
            key = self._key(inner, group)
            if key in seen:
                return False
            seen.add(key)
            return True

        def walk(batches: list[Sequence[Row]], shape_: Shape) -> None:
            if not any(part.ids for part in shape_):
                # no variables of its own (a group, a DISTINCT): its groups' units are merged
                # over every unit and batch, so that a tuple's variables stay adjacent in the
                # order for every answer row that shares it (else, declared answer by answer,
                # a later answer's variables land far below the ones it shares: exponential)
                units = _units([r for rows in batches for r in rows], shape_)
                for part in shape_:
                    for group in part.groups:
                        inners = [[r for r in unit if r[group.marker] is not None]
                                  for unit in units if unit[0][part.present] is not None]
                        merged = [r for inner in inners if fresh(inner, group) for r in inner]
                        walk([merged], group.shape)
                return
            for rows in batches:
                for unit in sorted(_units(rows, shape_), key=lambda u: _order_key(u[0], shape_)):
                    first = unit[0]
                    for part in shape_:
                        if first[part.present] is None:
                            continue
                        leaves(first, part)
                        for group in part.groups:
                            inner = [r for r in unit if r[group.marker] is not None]
                            if fresh(inner, group):
                                walk([inner], group.shape)

        walk(list(answers), shape)
        if order_variables:
            self.manager.declare_in_order(list(names))
        if isinstance(self.views, ViewFormulas):
            self.views.prefetch(encodings)

    def crossing(self, answers: Iterable[Sequence[Row]], shape: Shape) -> int:
        """The most variables open at once in any answer: its witness rows taken in the order
        of their first declared variable, a variable open from the first row that has it to
        the last. Few (a tuple's rows adjacent, as an order's lines) keep a sum of products
        small in the declared order; many (tuples shared across the rows in a crossing
        pattern) make it large in that order.

        >>> from aspen.sqlprov.shape import Part
        >>> m = ProvenanceManager()
        >>> shape = (Part("a", (Leaf("a", "var"),)), Part("b", (Leaf("b", "var"),)))
        >>> rows = [{"a": f"x{i}", "b": f"y{i % 3}"} for i in range(9)]
        >>> m.declare_in_order([f"x{i}" for i in range(9)] + ["y0", "y1", "y2"])
        >>> Composer(m).crossing([rows], shape), Composer(m).crossing([rows[:1]], shape)
        (4, 2)
        """
        leaves = _var_columns(shape)
        level = {name: i for i, name in enumerate(self.manager.order)}
        worst = 0
        for rows in answers:
            spans: dict[str, list[int]] = {}
            keyed = []
            for row in rows:
                names = [str(row[c]) for c in leaves if row.get(c) is not None]
                if names:
                    keyed.append((min(level.get(n, -1) for n in names), names))
            keyed.sort(key=lambda item: item[0])
            for index, (_, names) in enumerate(keyed):
                for name in names:
                    span = spans.setdefault(name, [index, index])
                    span[1] = index
            changes = sorted([(a, 1) for a, _ in spans.values()]
                             + [(b, -1) for _, b in spans.values()], key=lambda e: (e[0], -e[1]))
            open_now = 0
            for _, step in changes:
                open_now += step
                worst = max(worst, open_now)
        return worst

    def leaf(self, leaf: Leaf, value: Any) -> Formula:
        if leaf.kind == "var":
            name = str(value)
            found = self._vars.get(name)
            if found is None:  # the manager's lookup builds its set of names: once per name
                found = self._vars[name] = self.manager.var(name)
            return found
        if self.views is None:
            raise ValueError("a view witness, but no view formulas to read it with")
        return self.views(value)

    def answer(self, rows: Sequence[Row], shape: Shape) -> Formula:
        """The OR of the units among ``rows``."""
        return any_of(self.manager, [self.unit(group, shape) for group in _units(rows, shape)],
                      self.check)

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

    def _key(self, inner: Sequence[Row], group: Group) -> tuple:
        """What a group's formula depends on: the group and its rows' hidden columns."""
        cols = self._columns.get(id(group))
        if cols is None:
            cols = self._columns[id(group)] = columns(group.shape)
        rows = frozenset(values_key([r[c] for c in cols]) for r in inner)
        return (id(group), rows)

    def _group(self, rows: Sequence[Row], group: Group) -> Formula:
        inner = [r for r in rows if r[group.marker] is not None]
        if not self.memo:
            return self._build(inner, group)
        key = self._key(inner, group)
        found = self._groups.get(key)
        if found is None:
            found = self._groups[key] = self._build(inner, group)
        return found

    def _build(self, inner: Sequence[Row], group: Group) -> Formula:
        m = self.manager
        self.built += 1
        units = [self.unit(u, group.shape) for u in _units(inner, group.shape)]
        if group.kind == "exists":
            return any_of(m, units, self.check)
        if group.kind == "not":
            return ~any_of(m, units, self.check)
        return at_least(m, group.k, units)


def _var_columns(shape: Shape) -> list[str]:
    """The columns of every variable witness of ``shape``, nested groups included."""
    out = [leaf.column for part in shape for leaf in part.ids if leaf.kind == "var"]
    for part in shape:
        for group in part.groups:
            out += [c for c in _var_columns(group.shape) if c not in out]
    return out


#: Value types that are their own key (:func:`~aspen.sqlprov.shape.identity_of_values` keeps them).
_PLAIN = frozenset({str, int, float, bool, bytes, type(None), Decimal, date, datetime})

#: A shape's identity columns, by the shape's id (the shape kept alive with them).
_IDENTITY_COLUMNS: dict[int, tuple[Shape, tuple[str, ...]]] = {}


def values_key(values: Sequence[Any]) -> tuple:
    """``identity_of_values(values)``, without its per-value conversions when every value is
    of a plain type (the common case, and most of the grouping's time otherwise).

    >>> values_key(("a", 1)), values_key(("a", ["x"]))
    (('a', 1), ('a', ('x',)))
    """
    for value in values:
        if type(value) not in _PLAIN:
            return identity_of_values(tuple(values))
    return tuple(values)


def _identity_columns(shape: Shape) -> tuple[str, ...]:
    """The columns :func:`~aspen.sqlprov.shape.identity` reads, in its order."""
    found = _IDENTITY_COLUMNS.get(id(shape))
    if found is None or found[0] is not shape:
        if len(_IDENTITY_COLUMNS) > 1024:  # a long-lived process: forget old queries' shapes
            _IDENTITY_COLUMNS.clear()
        cols = tuple(c for part in shape
                     for c in (part.present, *(leaf.column for leaf in part.ids), *part.keys))
        found = _IDENTITY_COLUMNS[id(shape)] = (shape, cols)
    return found[1]


def _units(rows: Sequence[Row], shape: Shape) -> list[list[Row]]:
    cols = _identity_columns(shape)
    found: dict[tuple, list[Row]] = {}
    for row in rows:
        found.setdefault(values_key([row[c] for c in cols]), []).append(row)
    return list(found.values())


def _order_key(row: Row, shape: Shape) -> tuple:
    """A total order on units that keeps units with equal leading identity values together
    (values of mixed types compared by type name, then value; bytes by hash).

    >>> from aspen.sqlprov.shape import Part
    >>> shape = (Part("p", (Leaf("p", "var"),)),)
    >>> sorted(["b", None, "a"], key=lambda v: _order_key({"p": v}, shape))
    ['a', 'b', None]
    """
    out = []
    for value in identity(shape, row):
        if value is None:
            out.append(("~", 0))
        elif isinstance(value, bytes):
            out.append(("bytes", hash(value)))
        elif isinstance(value, int | float | str):
            out.append((type(value).__name__, value))
        else:
            out.append((type(value).__name__, repr(value)))
    return tuple(out)
