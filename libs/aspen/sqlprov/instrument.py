"""The PI-CS rewrite: the algebra as SQL whose every row names its witnesses (sqlglot).

:func:`instrument` turns a :class:`~aspen.sqlprov.algebra.Query` into two statements — the
*plain* one (the answer as the query means it) and the *instrumented* one (the answer's values
plus hidden provenance columns, one row per combination of witnesses) — and the shape that says
how a row's hidden columns combine (:mod:`aspen.sqlprov.shape`). Per operator:

- a base table occurrence adds the column of its tuple's variable (``'link:' || src || ':' ||
  dst``); a view occurrence its stored formula and its attributes (which tell rows apart);
- σ and Π keep the witness columns (bag projection: one row per witness);
- ⋈ puts both sides' columns side by side; a LEFT join adds, for every left row, the row with
  the right side NULL whose formula is the left's AND NOT (its right matches), the right side
  instrumented a second time under fresh names;
- EXISTS / IN join the subquery's witnesses as a group OR-ed per row; NOT EXISTS left-joins
  them as a group AND NOT-ed; both keep every left row (also one whose formula is false now:
  a deletion could make it true);
- UNION ALL pads each side's columns with NULL; DISTINCT, EXCEPT, INTERSECT and GROUP BY copy
  the values that identify a row or group and nest their inputs' shapes as groups; aggregate
  values come from the plain aggregate joined on the group (null-safe; Perm's join method).

Two kinds of choice point, decided by the ``choose`` callback (:mod:`aspen.sqlprov.optimize`
costs them; the default is the fixed rewrite): a base table's provenance column made early (at
the scan) or late (its key columns carried, the name made in the outermost block); a grouped
aggregate over a tuple-at-a-time input joined back or computed by windows over the group.

The SQL is generated per engine dialect: ``spark`` or ``duckdb``.

>>> from aspen.sqlprov.parse import parse_sql
>>> out = instrument(parse_sql("SELECT a.src FROM link a JOIN link b ON a.dst = b.src"))
>>> [leaf.kind for part in out.shape for leaf in part.ids]
['var', 'var']
>>> out.instrumented_sql("duckdb").count("'link' || ':' || CAST")
2
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aspen.errors import ConfigError
from aspen.sqlprov.algebra import (
    Aggregate,
    Distinct,
    Filter,
    Join,
    Node,
    Project,
    Query,
    Scan,
    SemiJoin,
    SetOp,
    scans,
)
from aspen.sqlprov.pats.common import Choose
from aspen.sqlprov.shape import Group, Leaf, Part, Shape, columns
from aspen.sqlprov.tables import NO_FORMULA_VIEWS, SQL_TABLES, SqlTable

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlglot import exp

__all__ = ["AGGREGATE_OPTIONS", "ENGINES", "FIXED", "PROJECTION_OPTIONS", "Instrumented",
           "fixed_option", "instrument", "tuple_at_a_time"]

#: The engines the SQL is generated for, by their sqlglot dialect names.
ENGINES = ("spark", "duckdb")
#: A base table occurrence's choice: make its variable name late (in the outermost block, from
#: its key columns carried so far; seed 001's PAT 1, the heuristic) or early (at the scan).
PROJECTION_OPTIONS = ("late", "early")
#: A grouped aggregate's choice: its values joined back on the group (Perm) or as windows
#: over the group (only over a tuple-at-a-time input).
AGGREGATE_OPTIONS = ("join-back", "window")
#: The options of the fixed (unoptimized) rewrite: provenance columns early, aggregates joined
#: back, every DISTINCT kept.
FIXED = frozenset({"early", "join-back", "keep"})


def fixed_option(label: str, options: tuple[str, ...]) -> int:
    """The fixed rewrite's option at a choice point (the first when none is fixed).

    >>> fixed_option("scan", PROJECTION_OPTIONS), fixed_option("aggregate", AGGREGATE_OPTIONS)
    (1, 0)
    """
    return next((i for i, o in enumerate(options) if o in FIXED), 0)


@dataclass(frozen=True)
class Instrumented:
    """A query's plain and instrumented statements, its output columns (the plain's and the
    instrumented's first columns), the shape of the hidden columns, and notes on where a
    formula is not exact."""

    plain: exp.Select
    instrumented: exp.Select
    outputs: tuple[str, ...]
    shape: Shape
    notes: tuple[str, ...]
    tables: tuple[str, ...]

    def plain_sql(self, engine: str) -> str:
        """The plain statement in ``engine``'s dialect."""
        return _render(self.plain, engine)

    def instrumented_sql(self, engine: str) -> str:
        """The instrumented statement in ``engine``'s dialect."""
        return _render(self.instrumented, engine)


_RENDERED: dict[tuple[int, str], tuple[exp.Expression, str]] = {}


def _render(select: exp.Expression, engine: str) -> str:
    """``select`` as SQL text of ``engine``, rendered once per statement and engine."""
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    found = _RENDERED.get((id(select), engine))
    if found is None or found[0] is not select:
        if len(_RENDERED) > 256:
            _RENDERED.clear()
        found = _RENDERED[(id(select), engine)] = (select, select.sql(dialect=engine,
                                                                        identify=True))
    return found[1]


def instrument(query: Query, tables: Mapping[str, SqlTable] | None = None,
               choose: Choose | None = None) -> Instrumented:
    """Both statements of ``query`` and the shape of its provenance columns; ``choose``
    decides each instrumentation choice (by default the fixed rewrite's, :func:`fixed_option`:
    provenance columns early, aggregates joined back)."""
    choose = fixed_option if choose is None else choose
    from sqlglot import exp

    gen = _Gen(SQL_TABLES if tables is None else tables, choose)
    root = query.root
    alias = gen.fresh("_t")
    plain = _select([_col(c, alias) for c in root.outputs], gen.plain(root), alias)
    if query.order:
        plain.set("order", exp.Order(expressions=[
            exp.Ordered(this=_col(root.outputs[i], alias), desc=desc) for i, desc in query.order]))
    select, shape = gen.instr(root)
    notes = list(dict.fromkeys(gen.notes))
    if query.limit is not None:
        plain.set("limit", exp.Limit(expression=exp.Literal.number(query.limit)))
        notes.append(f"LIMIT {query.limit}: a row's formula says when it is derived, not "
                     "whether it stays among the first rows")
    # the outputs, then the hidden columns in the order of shape.columns (how rows are read);
    # a provenance column chosen late is made here from the key columns carried so far
    select = _select([*_cols(root.outputs), *(gen.late_column(c) for c in columns(shape))],
                     select, gen.fresh("_t"))
    return Instrumented(plain, select, root.outputs, shape, tuple(notes),
                        tuple(dict.fromkeys(s.table for s in scans(root))))


# -- building SQL without copying (sqlglot's builders copy the tree at every step) -------------
def _col(name: str, table: str | None = None) -> exp.Column:
    from sqlglot import exp

    return exp.column(name, table=table)


def _cols(names: tuple[str, ...] | list[str]) -> list[exp.Expression]:
    return [_col(n) for n in names]


def _as(e: exp.Expression, name: str) -> exp.Alias:
    from sqlglot import exp

    return exp.alias_(e, name, copy=False)


def _null(name: str) -> exp.Alias:
    from sqlglot import exp

    return exp.alias_(exp.null(), name)


def _one(name: str) -> exp.Alias:
    from sqlglot import exp

    return exp.alias_(exp.Literal.number(1), name)


def _source(source: exp.Expression, alias: str | None) -> exp.Expression:
    from sqlglot import exp

    if alias is None:
        return source
    return exp.Subquery(this=source, alias=exp.TableAlias(this=exp.to_identifier(alias)))


def _select(items: list[exp.Expression], source: exp.Expression, alias: str | None,
            where: exp.Expression | None = None) -> exp.Select:
    """``SELECT items FROM (source) AS alias [WHERE where]`` (``alias`` None: a table)."""
    from sqlglot import exp

    select = exp.Select(expressions=list(items))
    select.set("from_", exp.From(this=_source(source, alias)))
    if where is not None:
        select.set("where", exp.Where(this=where.copy()))
    return select


def _joined(select: exp.Select, right: exp.Expression, alias: str,
            on: exp.Expression | None, side: str | None) -> exp.Select:
    """``select`` joined with ``(right) AS alias`` on ``on`` (None: a cross join, or for a
    LEFT join ON TRUE); ``side`` None (inner) or ``left``."""
    from sqlglot import exp

    source = _source(right, alias)
    if on is None and side is None:
        select.append("joins", exp.Join(this=source, kind="CROSS"))
        return select
    condition = exp.true() if on is None else on.copy()
    if side == "left":
        select.append("joins", exp.Join(this=source, on=condition, side="LEFT"))
    else:
        select.append("joins", exp.Join(this=source, on=condition, kind="INNER"))
    return select


class _Gen:
    """One generation: fresh names, the notes collected, the choices' callback; ``late`` maps
    a provenance column chosen late to its table's prefix and the key columns carried instead."""

    def __init__(self, tables: Mapping[str, SqlTable], choose: Choose | None = None) -> None:
        self.tables = tables
        self.choose = fixed_option if choose is None else choose
        self.n = 0
        self.notes: list[str] = []
        self.late: dict[str, tuple[str, tuple[str, ...]]] = {}

    def cols(self, shape: Shape) -> tuple[str, ...]:
        """The hidden columns a query block carries for ``shape``: each late provenance column
        as the key columns it will be made of."""
        out: list[str] = []
        for c in columns(shape):
            out.extend(self.late[c][1] if c in self.late else (c,))
        return tuple(out)

    def late_column(self, name: str) -> exp.Expression:
        """The hidden column ``name`` in the outermost block (made there when chosen late)."""
        if name not in self.late:
            return _col(name)
        prefix, carried = self.late[name]
        return _as(_variable(prefix, carried), name)

    def fresh(self, kind: str) -> str:
        self.n += 1
        return f"{kind}{self.n}"

    # -- plain ---------------------------------------------------------------------------------
    def plain(self, node: Node) -> exp.Select:
        """``node`` as SQL: exactly its output columns."""
        from sqlglot import exp

        if isinstance(node, Scan):
            return _select([_as(_col(c), o) for c, o in zip(node.columns, node.outputs,
                                                              strict=True)],
                           exp.to_table(node.table), None)
        t = self.fresh("_t")
        if isinstance(node, Filter):
            return _select(_cols(node.outputs), self.plain(node.child), t, node.condition)
        if isinstance(node, Project):
            return _select([_as(e.copy(), n) for n, e in node.items], self.plain(node.child), t)
        if isinstance(node, Join):
            select = _select(_cols(node.outputs), self.plain(node.left), t)
            return _joined(select, self.plain(node.right), self.fresh("_t"), node.condition,
                           "left" if node.kind == "left" else None)
        if isinstance(node, SemiJoin):
            inner = _select([exp.Literal.number(1)], self.plain(node.right), self.fresh("_t"),
                            node.condition)
            test: exp.Expression = exp.Exists(this=inner)
            if node.anti:
                test = exp.Not(this=test)
            return _select(_cols(node.outputs), self.plain(node.left), t, test)
        if isinstance(node, SetOp):
            left = _select([_as(_col(c), n) for c, n in zip(node.left.outputs, node.names,
                                                              strict=True)],
                           self.plain(node.left), t)
            right = _select([_as(_col(c), n) for c, n in zip(node.right.outputs, node.names,
                                                               strict=True)],
                            self.plain(node.right), self.fresh("_t"))
            kind = {"union_all": exp.Union, "except": exp.Except,
                    "intersect": exp.Intersect}[node.op]
            combined = kind(this=left, expression=right, distinct=node.op != "union_all")
            return _select(_cols(node.outputs), combined, self.fresh("_t"))
        if isinstance(node, Distinct):
            select = _select(_cols(node.outputs), self.plain(node.child), t)
            select.set("distinct", exp.Distinct())
            return select
        if isinstance(node, Aggregate):
            grouped = self._grouped(node, {n: n for n, _ in node.group})
            return _select(_cols(node.outputs), grouped, t, node.having)
        raise TypeError(f"not an algebra node: {node!r}")

    def _grouped(self, node: Aggregate, names: dict[str, str]) -> exp.Select:
        """The plain aggregate without HAVING; group columns named by ``names``."""
        from sqlglot import exp

        select = _select([*(_as(e.copy(), names[n]) for n, e in node.group),
                          *(_as(e.copy(), n) for n, e in node.aggregates)],
                         self.plain(node.child), self.fresh("_t"))
        if node.group:
            select.set("group", exp.Group(expressions=[e.copy() for _, e in node.group]))
        return select

    # -- instrumented --------------------------------------------------------------------------
    def instr(self, node: Node) -> tuple[exp.Select, Shape]:
        """``node`` instrumented: its output columns, then the hidden ones of its shape."""
        if isinstance(node, Scan):
            return self._scan(node)
        t = self.fresh("_t")
        if isinstance(node, Filter):
            select, shape = self.instr(node.child)
            return _select(_cols(node.outputs + self.cols(shape)), select, t, node.condition), shape
        if isinstance(node, Project):
            select, shape = self.instr(node.child)
            return _select([*(_as(e.copy(), n) for n, e in node.items),
                            *_cols(self.cols(shape))], select, t), shape
        if isinstance(node, Join):
            return self._join(node, t)
        if isinstance(node, SemiJoin):
            left, lshape = self.instr(node.left)
            right, rshape, marker = self._marked(node.right)
            u = self.fresh("_u")
            group = Group("not" if node.anti else "exists", rshape, marker)
            shape = (*lshape, Part(u, groups=(group,)))
            select = _select([*_cols(node.outputs + self.cols(lshape)),
                              *_cols((marker, *self.cols(rshape))), _one(u)], left, t)
            return _joined(select, right, self.fresh("_t"), node.condition,
                           "left" if node.anti else None), shape
        if isinstance(node, SetOp):
            return self._set_op(node, t)
        if isinstance(node, Distinct):
            child, cshape, marker = self._marked(node.child)
            u, keys = self.fresh("_u"), [self.fresh("_k") for _ in node.outputs]
            shape = (Part(u, keys=tuple(keys), groups=(Group("exists", cshape, marker),)),)
            return _select([*_cols(node.outputs),
                            *(_as(_col(c), k) for c, k in zip(node.outputs, keys, strict=True)),
                            *_cols((marker, *self.cols(cshape))), _one(u)], child, t), shape
        if isinstance(node, Aggregate):
            return self._aggregate(node, t)
        raise TypeError(f"not an algebra node: {node!r}")

    def _marked(self, node: Node) -> tuple[exp.Select, Shape, str]:
        """``node`` instrumented with a marker column (1 on each of its rows) added."""
        select, shape = self.instr(node)
        marker = self.fresh("_m")
        return _select([*_cols(node.outputs + self.cols(shape)), _one(marker)], select,
                       self.fresh("_t")), shape, marker

    def _scan(self, node: Scan) -> tuple[exp.Select, Shape]:
        from sqlglot import exp

        table = self.tables[node.table]
        witness = self.fresh("_p")
        plain = [_as(_col(c), o) for c, o in zip(node.columns, node.outputs, strict=True)]
        if table.kind == "view":
            if node.table in NO_FORMULA_VIEWS:
                raise ConfigError(f"view {node.table} stores no formula (an aggregate of "
                                  "active_region): query active_region for provenance")
            keys = [self.fresh("_k") for _ in table.star]
            hidden = [_as(_col("provenance"), witness),
                      *(_as(_col(c), k) for c, k in zip(table.star, keys, strict=True))]
            part = Part(witness, (Leaf(witness, "view"),), tuple(keys))
        else:
            label = f"provenance column of {node.table} {node.prefix}"
            if PROJECTION_OPTIONS[self.choose(label, PROJECTION_OPTIONS)] == "late":
                carried = tuple(self.fresh("_c") for _ in table.key)
                self.late[witness] = (table.prefix, carried)
                hidden = [_as(_col(k), c) for k, c in zip(table.key, carried, strict=True)]
            else:
                hidden = [_as(_variable(table.prefix, table.key), witness)]
            part = Part(witness, (Leaf(witness, "var"),))
        return _select([*plain, *hidden], exp.to_table(node.table), None), (part,)

    def _join(self, node: Join, t: str) -> tuple[exp.Select, Shape]:
        left, lshape = self.instr(node.left)
        right, rshape = self.instr(node.right)
        if node.kind != "left":
            select = _select(_cols(node.outputs + self.cols(lshape) + self.cols(rshape)), left, t)
            return _joined(select, right, self.fresh("_t"), node.condition, None), \
                (*lshape, *rshape)
        # matched rows (left AND right), then every left row with the right side NULL
        # (left AND NOT its right matches): the right side again, under fresh names
        again, ashape, marker = self._marked(node.right)
        u = self.fresh("_u")
        unmatched = Part(u, groups=(Group("not", ashape, marker),))
        negated = (marker, *self.cols(ashape))
        matched = _select([*_cols(node.outputs + self.cols(lshape) + self.cols(rshape)),
                           *map(_null, negated), _one(u)], left, t)
        matched = _joined(matched, right, self.fresh("_t"), node.condition, None)
        padded = _select([*_cols(node.left.outputs), *map(_null, node.right.outputs),
                          *_cols(self.cols(lshape)), *map(_null, self.cols(rshape)),
                          *_cols(negated), _one(u)], left.copy(), self.fresh("_t"))
        padded = _joined(padded, again, self.fresh("_t"), node.condition, "left")
        shape = (*lshape, *rshape, unmatched)
        both = _union(matched, padded)
        return _select(_cols(node.outputs + self.cols(shape)), both, self.fresh("_t")), shape

    def _set_op(self, node: SetOp, t: str) -> tuple[exp.Select, Shape]:
        from sqlglot import exp

        if node.op == "union_all":
            left, lshape = self.instr(node.left)
            right, rshape = self.instr(node.right)
            lcols, rcols = self.cols(lshape), self.cols(rshape)
            first = _select([*(_as(_col(c), n) for c, n in zip(node.left.outputs, node.names,
                                                                 strict=True)),
                             *_cols(lcols), *map(_null, rcols)], left, t)
            second = _select([*(_as(_col(c), n) for c, n in zip(node.right.outputs, node.names,
                                                                  strict=True)),
                              *map(_null, lcols), *_cols(rcols)], right, self.fresh("_t"))
            shape = (*lshape, *rshape)
            return _select(_cols(node.outputs + self.cols(shape)), _union(first, second),
                           self.fresh("_t")), shape
        left, lshape, lmark = self._marked(node.left)
        right, rshape, rmark = self._marked(node.right)
        u, keys = self.fresh("_u"), [self.fresh("_k") for _ in node.names]
        kind = "not" if node.op == "except" else "exists"
        shape = (Part(u, keys=tuple(keys), groups=(Group("exists", lshape, lmark),
                                                    Group(kind, rshape, rmark))),)
        same = exp.and_(*(exp.NullSafeEQ(this=_col(a), expression=_col(b))
                          for a, b in zip(node.left.outputs, node.right.outputs, strict=True)))
        select = _select([
            *(_as(_col(c), n) for c, n in zip(node.left.outputs, node.names, strict=True)),
            *(_as(_col(c), k) for c, k in zip(node.left.outputs, keys, strict=True)),
            *_cols((lmark, *self.cols(lshape), rmark, *self.cols(rshape))), _one(u)], left, t)
        return _joined(select, right, self.fresh("_t"), same,
                       "left" if node.op == "except" else None), shape

    def _aggregate(self, node: Aggregate, t: str) -> tuple[exp.Select, Shape]:
        from sqlglot import exp

        u = self.fresh("_u")
        if not node.group and node.having is None:  # one row, whatever the input: true
            return _select([*_cols(node.outputs), _one(u)], self._grouped(node, {}), t), \
                (Part(u),)
        child, cshape, marker = self._marked(node.child)
        joined = {n: self.fresh("_j") for n, _ in node.group}
        agg = self._grouped(node, joined)
        keys = [self.fresh("_k") for _ in node.group]
        kind, k = ("atleast", node.threshold) if node.threshold is not None else ("exists", 0)
        shape = (Part(u, keys=tuple(keys), groups=(Group(kind, cshape, marker, k or 0),)),)
        hidden = _cols((marker, *self.cols(cshape)))
        a = self.fresh("_t")
        if node.group and _windowable(node) and self.choose(
                "aggregate GROUP BY " + ", ".join(e.sql() for _, e in node.group),
                AGGREGATE_OPTIONS) == 1:
            # every input row with its group's aggregates as windows over the group (no join)
            over = [e.copy() for _, e in node.group]
            select = _select([
                *(_as(e.copy(), n) for n, e in node.group),
                *(_as(exp.Window(this=e.copy(), partition_by=[o.copy() for o in over]), n)
                  for n, e in node.aggregates),
                *(_as(e.copy(), key) for (_, e), key in zip(node.group, keys, strict=True)),
                *hidden, _one(u)], child, t)
        elif node.group:  # every input row, its group's aggregates joined (null-safe) on it
            select = _select([
                *(_as(e.copy(), n) for n, e in node.group),
                *(_col(n, a) for n, _ in node.aggregates),
                *(_as(e.copy(), key) for (_, e), key in zip(node.group, keys, strict=True)),
                *hidden, _one(u)], child, t)
            on = exp.and_(*(exp.NullSafeEQ(this=e.copy(), expression=_col(joined[n], a))
                            for n, e in node.group))
            select = _joined(select, agg, a, on, "left")
        else:  # the one row, every input row joined to it (none: the row alone)
            select = _select([*(_col(n, a) for n, _ in node.aggregates), *hidden, _one(u)],
                             agg, a)
            select = _joined(select, child, t, None, "left")
        where = None
        if node.having is not None and node.threshold is None:
            where = node.having
            self.notes.append("HAVING other than COUNT(*) >= k: a group's formula is the OR of "
                              "its rows', not the condition's meaning")
        return _select(_cols(node.outputs + self.cols(shape)), select, self.fresh("_t"),
                       where), shape


def _variable(prefix: str, key: tuple[str, ...]) -> exp.Expression:
    """The variable name of a base tuple: ``prefix:key1:key2`` over the ``key`` columns."""
    from sqlglot import exp

    name: exp.Expression = exp.Literal.string(prefix)
    for column in key:
        text = exp.Cast(this=_col(column), to=exp.DataType(this=exp.DataType.Type.TEXT))
        name = exp.DPipe(this=exp.DPipe(this=name, expression=exp.Literal.string(":")),
                         expression=text)
    return name


def tuple_at_a_time(node: Node) -> bool:
    """Whether ``node``'s instrumented rows are its plain rows, each once (scans, filters,
    projections, inner joins, UNION ALL): only then may an aggregate over it be computed
    from the instrumented rows (the window method)."""
    if isinstance(node, Scan):
        return True
    if isinstance(node, Filter | Project):
        return tuple_at_a_time(node.child)
    if isinstance(node, Join) and node.kind != "left":
        return tuple_at_a_time(node.left) and tuple_at_a_time(node.right)
    if isinstance(node, SetOp) and node.op == "union_all":
        return tuple_at_a_time(node.left) and tuple_at_a_time(node.right)
    return False


def _windowable(node: Aggregate) -> bool:
    """Whether the window method computes ``node``'s aggregates exactly: a tuple-at-a-time
    input and no DISTINCT aggregate (Spark has no DISTINCT window)."""
    from sqlglot import exp

    return tuple_at_a_time(node.child) and not any(
        e.find(exp.Distinct) for _, e in node.aggregates)


def _union(first: exp.Select, second: exp.Select) -> exp.Union:
    from sqlglot import exp

    return exp.Union(this=first, expression=second, distinct=False)
