"""Properties of the algebra's operators that the provenance-aware transformations rest on
(seed 001, §3.1): **keys** (bottom-up: sets of columns on which no two rows agree, which also
says the node has no duplicate rows), **set semantics** (top-down: whether the node's
multiplicities can matter to the answer), **equivalence classes** (bottom-up: columns equal on
every row, at most one constant per class) and **needed columns** (top-down: the columns some
ancestor reads).

Every property is sound, not complete: a key inferred is a key, a class inferred holds, a
column not listed as needed is read by no ancestor. Set semantics is never propagated through
an operator that counts (an aggregate) — and this algebra has no bag difference (``EXCEPT``
and ``INTERSECT`` are set operations), so the seed's unsound rule for it cannot arise.

>>> from aspen.sqlprov.parse import parse_sql
>>> q = parse_sql("SELECT DISTINCT l.src, l.dst FROM link l WHERE l.src = 'a'")
>>> sorted(map(sorted, keys(q.root.child)))
[['_o1', '_o2']]
>>> [c for c in classes(q.root.child.child) if c.constant]
[Class(columns=frozenset({'l__src'}), constant="'a'")]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aspen.sqlprov.algebra import (
    Aggregate,
    Distinct,
    Filter,
    Join,
    Node,
    Project,
    Scan,
    SemiJoin,
    SetOp,
    children,
)
from aspen.sqlprov.tables import SQL_TABLES, SqlTable

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["Class", "classes", "column_of", "constant_of", "equalities", "keys", "needed",
           "set_semantics"]

Keys = frozenset[frozenset[str]]


@dataclass(frozen=True)
class Class:
    """Columns equal on every row; ``constant`` (SQL text of a literal) when they also equal it."""

    columns: frozenset[str]
    constant: str | None = None


# -- keys ---------------------------------------------------------------------------------------
def _minimal(found: Iterable[frozenset[str]]) -> Keys:
    """Drop every key that is a superset of another (the seed's MIN)."""
    found = set(found)
    return frozenset(k for k in found if not any(o < k for o in found))


def keys(node: Node, tables: Mapping[str, SqlTable] | None = None) -> Keys:
    """The keys of ``node``'s output (empty: none known). A key means no two rows agree on
    it, so the node has no duplicate rows; the empty key means at most one row.

    >>> from aspen.sqlprov.parse import parse_sql
    >>> sorted(map(sorted, keys(parse_sql("SELECT src FROM link GROUP BY src").root.child)))
    [['_g1']]
    """
    return _keys(node, SQL_TABLES if tables is None else tables)


def _keys(node: Node, tables: Mapping[str, SqlTable]) -> Keys:
    if isinstance(node, Scan):
        table = tables.get(node.table)
        if table is None:
            return frozenset()
        key = table.star if table.kind == "view" else table.key
        if key and all(c in node.columns for c in key):
            return frozenset({frozenset(f"{node.prefix}__{c}" for c in key)})
        return frozenset()
    if isinstance(node, Filter | SemiJoin):
        return _keys(node.child if isinstance(node, Filter) else node.left, tables)
    if isinstance(node, Project):
        renamed: dict[str, str] = {}
        for name, e in node.items:
            source = column_of(e)
            if source is not None:
                renamed.setdefault(source, name)
        return _minimal(frozenset(renamed[c] for c in k) for k in _keys(node.child, tables)
                        if all(c in renamed for c in k))
    if isinstance(node, Join):
        left, right = _keys(node.left, tables), _keys(node.right, tables)
        found = {a | b for a in left for b in right}
        pairs = equalities(node.condition)
        for side, other, mine in ((left, right, node.right.outputs),
                                  (right, left, node.left.outputs)):
            if node.kind == "left" and side is right:
                continue  # a left row unmatched or matched: left keys survive, right ones not
            # every row of ``side`` meets at most one row of the other side: its keys stay
            bound = {b for a, b in pairs if b in mine} | {a for a, b in pairs if a in mine}
            if any(k <= bound for k in other):
                found |= set(side)
        return _minimal(found)
    if isinstance(node, SetOp):
        if node.op == "union_all":
            return frozenset()
        return frozenset({frozenset(node.names)})  # EXCEPT and INTERSECT are set operations
    if isinstance(node, Distinct):
        return _keys(node.child, tables) or frozenset({frozenset(node.outputs)})
    if isinstance(node, Aggregate):
        return frozenset({frozenset(n for n, _ in node.group)})
    raise TypeError(f"not an algebra node: {node!r}")


# -- expressions ------------------------------------------------------------------------------
def column_of(e: exp.Expression) -> str | None:
    """The column ``e`` is, when it is a plain column reference."""
    from sqlglot import exp

    while isinstance(e, exp.Paren):
        e = e.this
    return e.name if isinstance(e, exp.Column) and not isinstance(e.this, exp.Star) else None


def constant_of(e: exp.Expression) -> str | None:
    """The SQL text of ``e`` when it is a literal (a string or a number)."""
    from sqlglot import exp

    while isinstance(e, exp.Paren):
        e = e.this
    return e.sql() if isinstance(e, exp.Literal) else None


def _conjuncts(condition: exp.Expression | None) -> Iterable[exp.Expression]:
    from sqlglot import exp

    if condition is None:
        return
    while isinstance(condition, exp.Paren):
        condition = condition.this
    if isinstance(condition, exp.And):
        yield from _conjuncts(condition.this)
        yield from _conjuncts(condition.expression)
    else:
        yield condition


def equalities(condition: exp.Expression | None) -> list[tuple[str, str]]:
    """The ``column = column`` conjuncts of ``condition``."""
    from sqlglot import exp

    out = []
    for c in _conjuncts(condition):
        if isinstance(c, exp.EQ):
            a, b = column_of(c.this), column_of(c.expression)
            if a is not None and b is not None:
                out.append((a, b))
    return out


def _constants(condition: exp.Expression | None) -> list[tuple[str, str]]:
    """The ``column = literal`` conjuncts of ``condition`` as (column, literal SQL)."""
    from sqlglot import exp

    out = []
    for c in _conjuncts(condition):
        if isinstance(c, exp.EQ):
            for a, b in ((c.this, c.expression), (c.expression, c.this)):
                col, lit = column_of(a), constant_of(b)
                if col is not None and lit is not None:
                    out.append((col, lit))
    return out


# -- equivalence classes -------------------------------------------------------------------------
def merge(found: Iterable[Class]) -> tuple[Class, ...]:
    """The transitive closure (the seed's E*): overlapping classes merged; a class that would
    hold two constants keeps none of them (two literals of different text may still be equal)."""
    out: list[tuple[set[str], set[str]]] = []
    for c in found:
        cols, consts = set(c.columns), {c.constant} if c.constant else set()
        for other in [o for o in out if o[0] & cols]:
            out.remove(other)
            cols |= other[0]
            consts |= other[1]
        out.append((cols, consts))
    return tuple(Class(frozenset(cols), next(iter(consts)) if len(consts) == 1 else None)
                 for cols, consts in out)


def _from_condition(condition: exp.Expression | None) -> list[Class]:
    return ([Class(frozenset(p)) for p in equalities(condition)]
            + [Class(frozenset({c}), lit) for c, lit in _constants(condition)])


def restrict(found: Iterable[Class], columns: Iterable[str]) -> tuple[Class, ...]:
    """``found`` restricted to ``columns`` (classes left with no column dropped)."""
    allowed = set(columns)
    return tuple(Class(c.columns & allowed, c.constant) for c in found if c.columns & allowed)


def classes(node: Node) -> tuple[Class, ...]:
    """Equivalence classes of ``node``'s output that are not singletons without a constant.

    >>> from aspen.sqlprov.parse import parse_sql
    >>> q = parse_sql("SELECT a.src FROM link a JOIN link b ON a.dst = b.src")
    >>> [sorted(c.columns) for c in classes(q.root.child)]
    [['a__dst', 'b__src']]
    """
    return tuple(c for c in _classes(node) if len(c.columns) > 1 or c.constant)


def _classes(node: Node) -> tuple[Class, ...]:
    if isinstance(node, Scan):
        return ()
    if isinstance(node, Filter):
        return merge([*_classes(node.child), *_from_condition(node.condition)])
    if isinstance(node, Project):
        inner = _classes(node.child)
        found: list[Class] = []
        for name, e in node.items:
            source, lit = column_of(e), constant_of(e)
            if lit is not None:
                found.append(Class(frozenset({name}), lit))
            for c in inner:
                if source is not None and source in c.columns:
                    found.append(Class(frozenset({name}), c.constant))
        # two outputs of one input class are equal: link them through the class
        by_class: dict[int, list[str]] = {}
        for name, e in node.items:
            source = column_of(e)
            for i, c in enumerate(inner):
                if source is not None and source in c.columns:
                    by_class.setdefault(i, []).append(name)
        found += [Class(frozenset(names)) for names in by_class.values()]
        return merge(found)
    if isinstance(node, Join):
        if node.kind == "left":  # the right side may be NULL-padded: only the left's hold
            return _classes(node.left)
        return merge([*_classes(node.left), *_classes(node.right),
                      *_from_condition(node.condition)])
    if isinstance(node, SemiJoin):
        return _classes(node.left)
    if isinstance(node, Distinct):
        return _classes(node.child)
    if isinstance(node, Aggregate):
        inner = _classes(node.child)
        found = []
        for name, e in node.group:
            source = column_of(e)
            for c in inner:
                if source is not None and source in c.columns:
                    found.append(Class(frozenset({name}) | c.columns, c.constant))
        return restrict(merge(found), [n for n, _ in node.group])
    if isinstance(node, SetOp):
        rename = dict(zip(node.left.outputs, node.names, strict=True))
        left = [Class(frozenset(rename[c] for c in k.columns), k.constant)
                for k in restrict(_classes(node.left), rename)]
        if node.op == "intersect":
            back = dict(zip(node.right.outputs, node.names, strict=True))
            right = [Class(frozenset(back[c] for c in k.columns), k.constant)
                     for k in restrict(_classes(node.right), back)]
            return merge(left + right)
        if node.op == "except":
            return merge(left)
        return ()  # UNION ALL: only what both sides share; not worth the bookkeeping
    raise TypeError(f"not an algebra node: {node!r}")


# -- set semantics, needed columns (top-down) ---------------------------------------------------
def set_semantics(root: Node) -> dict[int, bool]:
    """Per node (by ``id``) whether its multiplicities cannot matter: a DISTINCT, an EXISTS or
    a set operation reads it, through operators that do not count (never an aggregate; the root
    answer is a bag).

    >>> from aspen.sqlprov.parse import parse_sql
    >>> q = parse_sql("SELECT DISTINCT q.n FROM (SELECT DISTINCT src AS n FROM link) q")
    >>> inner = q.root.child.child
    >>> type(inner).__name__, set_semantics(q.root)[id(inner)]
    ('Distinct', True)
    """
    out: dict[int, bool] = {}

    def go(node: Node, flag: bool) -> None:
        out[id(node)] = flag
        if isinstance(node, Distinct):
            go(node.child, True)
        elif isinstance(node, Aggregate):
            go(node.child, False)  # counts, sums and thresholds see every duplicate
        elif isinstance(node, SemiJoin):
            go(node.left, flag)
            go(node.right, True)  # only whether a match exists
        elif isinstance(node, SetOp):
            inner = flag if node.op == "union_all" else True  # EXCEPT / INTERSECT are distinct
            go(node.left, inner)
            go(node.right, inner)
        else:
            for child in children(node):
                go(child, flag)

    go(root, False)
    return out


def _referenced(e: exp.Expression | None) -> set[str]:
    from sqlglot import exp

    return set() if e is None else {c.name for c in e.find_all(exp.Column)}


def needed(root: Node) -> dict[int, frozenset[str]]:
    """Per node (by ``id``) the output columns some ancestor reads (the seed's icols); the
    root's are all its outputs. Below a DISTINCT, a set operation or a group, every column.

    >>> from aspen.sqlprov.parse import parse_sql
    >>> q = parse_sql("SELECT q.n FROM (SELECT src AS n, cost * 2 AS c FROM link) q")
    >>> inner = q.root.child
    >>> sorted(needed(q.root)[id(inner)]), inner.outputs
    (['_o1'], ('_o1', '_o2'))
    """
    out: dict[int, frozenset[str]] = {}

    def go(node: Node, wanted: set[str]) -> None:
        out[id(node)] = frozenset(wanted)
        if isinstance(node, Filter):
            go(node.child, wanted | _referenced(node.condition))
        elif isinstance(node, Project):
            go(node.child, set().union(*(_referenced(e) for n, e in node.items if n in wanted)))
        elif isinstance(node, Join):
            both = wanted | _referenced(node.condition)
            go(node.left, both & set(node.left.outputs))
            go(node.right, both & set(node.right.outputs))
        elif isinstance(node, SemiJoin):
            both = wanted | _referenced(node.condition)
            go(node.left, both & set(node.left.outputs))
            go(node.right, both & set(node.right.outputs))
        elif isinstance(node, Aggregate):
            used = wanted | _referenced(node.having)
            inner = set().union(*(_referenced(e) for _, e in node.group),
                                *(_referenced(e) for n, e in node.aggregates if n in used))
            go(node.child, inner)
        else:  # DISTINCT and set operations compare whole rows; a scan has no input
            for child in children(node):
                go(child, set(child.outputs))

    go(root, set(root.outputs))
    return out
