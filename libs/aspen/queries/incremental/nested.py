"""Nested queries as a composition of incremental stages: each block is one single-block query
(:mod:`.compile`) over the base tables and the results of the blocks it nests, and a batch's
changes of an inner block's *result* are the input changes of the block around it.

Decorrelation, block by block (:func:`compile_nested`):

- a **derived table** ``FROM (SELECT …) d`` is a stage whose result the outer block reads as
  table ``d``;
- ``x IN (SELECT e FROM …)`` (uncorrelated) is a stage of the distinct values of ``e``, joined
  to the outer block on ``x`` (each outer row matches at most one of them: a semi-join);
- ``EXISTS (SELECT … WHERE i.c = o.c AND …)`` is a stage of the distinct correlated inner
  columns, joined on the equalities; without correlation it is ``(SELECT COUNT(*) …) > 0``;
- ``x > (SELECT AVG(n) FROM …)`` (a scalar subquery: one global aggregate, uncorrelated) is a
  one-row stage; the outer block becomes three: its rows before the comparison (a
  projection), those joined to the scalar rows on a constant, then its outputs over those
  with the comparison as a filter of one relation.

Refused, with the reason (the query is then recomputed): NOT IN and NOT EXISTS (anti-joins),
correlation other than equalities in EXISTS, a correlated IN or scalar subquery, a scalar
subquery with GROUP BY, subqueries elsewhere than FROM and WHERE conjuncts, and any stage the
single-block compiler refuses. The composition feeds the outer stage ``a``'s changes of the
inner one (old rows out, new rows in), not the inner ``h``'s: ``a`` is not a homomorphism (an
AVG's value is not the merge of its parts), so the outer block must see the answer rows.

>>> plan = compile_nested("q", "SELECT d.src, d.n FROM (SELECT a.src AS src, COUNT(*) AS n "
...     "FROM link a GROUP BY a.src) d WHERE d.n > 1")
>>> [s.sql for s in plan.stages]  # doctest: +NORMALIZE_WHITESPACE
['SELECT a.src AS src, COUNT(*) AS n FROM link AS a GROUP BY a.src',
 'SELECT d.src, d.n FROM _n1 AS d WHERE d.n > 1']
>>> compile_nested("q", "SELECT a.src FROM link a WHERE NOT EXISTS "
...     "(SELECT 1 FROM link b WHERE b.src = a.dst)").reason
'NOT EXISTS (an anti-join) is recomputed'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aspen.errors import ConfigError
from aspen.queries.incremental.apply import IncrementalQuery
from aspen.queries.incremental.compile import IncrementalPlan, NotIncremental, compile_query
from aspen.queries.incremental.delta import SignedRows
from aspen.queries.incremental.expr import NotIncrementalError
from aspen.queries.spec import DIALECT, ParsedQuery
from aspen.queries.tables import TableColumns

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["NestedPlan", "NestedQuery", "Stage", "compile_nested", "is_nested"]

#: The most stages a nested query is compiled into (each holds a state).
MAX_STAGES = 12


@dataclass(frozen=True)
class Stage:
    """One block: the table its result is read as (``_n<i>``; the last stage's is the
    query's result), its single-block SQL, parsed and compiled."""

    table: str
    sql: str
    parsed: ParsedQuery
    plan: IncrementalPlan

    @property
    def columns(self) -> tuple[str, ...]:
        """The output columns of its result."""
        return self.plan.output_names


@dataclass(frozen=True)
class NestedPlan:
    """The stages of a nested query, inner first; the last one's result is the answer."""

    name: str
    stages: tuple[Stage, ...]

    @property
    def tables(self) -> tuple[str, ...]:
        """The lake tables read (not the stages' results), sorted."""
        inner = {s.table for s in self.stages}
        return tuple(sorted({t for s in self.stages for t in s.plan.tables} - inner))

    @property
    def output_names(self) -> tuple[str, ...]:
        """The answer's columns."""
        return self.stages[-1].columns


def is_nested(sql: str) -> bool:
    """Whether ``sql`` holds a subquery (a nested SELECT or EXISTS).

    >>> is_nested("SELECT src FROM link"), is_nested("SELECT 1 AS x FROM (SELECT 1 AS y) d")
    (False, True)
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except SqlglotError:
        return False
    return any(isinstance(n, exp.Subquery | exp.Exists) for n in tree.walk())


def compile_nested(name: str, sql: str, tables: Mapping[str, TableColumns] | None = None
                   ) -> NestedPlan | NotIncremental:
    """The stages of ``sql`` over ``tables`` (default: the lake's), or why it is recomputed
    (see the module docstring)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from aspen.queries import limits
    from aspen.queries.tables import known_tables

    try:
        limits.check_text(sql)
        tree = sqlglot.parse_one(sql, read=DIALECT)
        limits.check_size(tree)
        if not isinstance(tree, exp.Select):
            return NotIncremental("a nested query is one SELECT block around its subqueries")
        builder = _Builder(name, dict(known_tables() if tables is None else tables))
        builder.stage(tree)
    except NotIncrementalError as err:
        return NotIncremental(str(err))
    except ConfigError as err:
        return NotIncremental(str(err).removeprefix(f"query {name!r}: "))
    except SqlglotError as err:
        return NotIncremental(f"the SQL does not parse: {str(err).splitlines()[0]}")
    return NestedPlan(name, tuple(builder.stages))


class NestedQuery:
    """A nested plan and its stages' states: a batch's table changes in, the answer's out."""

    def __init__(self, plan: NestedPlan) -> None:
        self.plan = plan
        self.queries = [IncrementalQuery(s.plan) for s in plan.stages]

    def apply(self, changes: Mapping[str, SignedRows]) -> dict[tuple, int]:
        """Apply one batch: each stage in turn, its result's changes the next ones' input."""
        feed, out = dict(changes), {}
        for stage, query in zip(self.plan.stages, self.queries, strict=True):
            out = query.apply(feed).result
            feed[stage.table] = SignedRows(stage.columns, out)
        return out

    def build(self, tables: Mapping[str, SignedRows]) -> dict[tuple, int]:
        """Every stage from empty with every row inserted; the whole answer."""
        feed, out = dict(tables), {}
        for stage, query in zip(self.plan.stages, self.queries, strict=True):
            out = query.build(feed)
            feed[stage.table] = SignedRows(stage.columns, dict(out))
        return out

    def answer(self) -> dict[tuple, int]:
        """The whole answer, ``a`` of the last stage's state."""
        return self.queries[-1].answer()

    def state_rows(self) -> int:
        """The rows all stages' states hold."""
        return sum(q.state.row_count() for q in self.queries)


def _sql(node: exp.Expression) -> str:
    return node.sql(dialect=DIALECT)


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    from sqlglot import exp

    if isinstance(node, exp.Where):
        node = node.this
    if node is None:
        return []
    node = node.unnest() if isinstance(node, exp.Paren) else node
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def _has_subquery(node: exp.Expression) -> bool:
    from sqlglot import exp

    return any(isinstance(n, exp.Subquery | exp.Exists | exp.Select) for n in node.walk())


def _inner_select(node: exp.Expression) -> exp.Select:
    from sqlglot import exp

    inner = node.this if isinstance(node, exp.Subquery | exp.Exists) else node
    while isinstance(inner, exp.Subquery):
        inner = inner.this
    if not isinstance(inner, exp.Select):
        raise NotIncrementalError("a subquery that is not one SELECT (UNION …) is recomputed")
    return inner


def _aliases(select: exp.Select) -> dict[str, exp.Expression]:
    """The FROM and JOIN items of ``select`` by alias (or table name)."""
    items = [select.args["from_"].this] if select.args.get("from_") else []
    items += [j.this for j in select.args.get("joins") or []]
    return {item.alias_or_name: item for item in items}


def _aggregates(select: exp.Select) -> bool:
    from sqlglot import exp

    return bool(select.args.get("group")) or any(
        isinstance(n, exp.AggFunc) for e in select.expressions for n in e.walk())


def _outer_columns(select: exp.Select) -> list[exp.Column]:
    """The columns of ``select`` (not of its own subqueries) qualified by an alias it does not
    define: its correlation with an outer block."""
    from sqlglot import exp

    own = set(_aliases(select))
    return [c for c in select.find_all(exp.Column)
            if c.table and c.table not in own and c.find_ancestor(exp.Select) is select]


class _Builder:
    """One decomposition: the stages so far and the tables in scope (lake's and stages')."""

    def __init__(self, name: str, tables: dict[str, TableColumns]) -> None:
        self.name = name
        self.tables = tables
        self.stages: list[Stage] = []

    def _table(self, sql: str) -> str:
        """Compile ``sql`` (one block over the tables in scope) as the next stage."""
        from aspen.queries.sql import parse_query

        if len(self.stages) >= MAX_STAGES:
            raise NotIncrementalError(f"the query nests into more than {MAX_STAGES} blocks")
        table = f"_n{len(self.stages) + 1}"
        parsed = parse_query(self.name, sql, self.tables)
        plan = compile_query(parsed)
        if isinstance(plan, NotIncremental):
            raise NotIncrementalError(f"{plan.reason} (in the block {_short(sql)!r})")
        names = plan.output_names
        self.tables[table] = TableColumns(names, names)
        self.stages.append(Stage(table, sql, parsed, plan))
        return table

    def stage(self, select: exp.Select) -> str:
        """Decompose ``select`` into stages; the table of its result."""
        return self._table(_sql(self._block(select.copy())))

    def _block(self, select: exp.Select) -> exp.Select:
        """``select`` with its derived tables and WHERE subqueries replaced by stages' tables
        (the scalar comparisons staged too: then the select of the last stage)."""
        from sqlglot import exp

        for key in ("expressions", "group"):
            parts = select.args.get(key)
            for part in parts if isinstance(parts, list) else [parts] if parts else []:
                if _has_subquery(part):
                    raise NotIncrementalError("a subquery in SELECT or GROUP BY is recomputed")
        for join in select.args.get("joins") or []:
            if join.args.get("on") is not None and _has_subquery(join.args["on"]):
                raise NotIncrementalError("a subquery in a JOIN's ON is recomputed")
        for alias, item in list(_aliases(select).items()):
            if isinstance(item, exp.Subquery):
                if not item.alias:
                    raise NotIncrementalError("a derived table needs an alias")
                table = self.stage(_inner_select(item))
                item.replace(exp.alias_(exp.to_table(table), alias, table=True))
        kept, scalars = [], []
        for cond in _conjuncts(select.args.get("where")):
            if not _has_subquery(cond):
                kept.append(cond)
            elif isinstance(cond, exp.Not) and isinstance(cond.this, exp.Exists):
                raise NotIncrementalError("NOT EXISTS (an anti-join) is recomputed")
            elif isinstance(cond, exp.Not) and isinstance(cond.this, exp.In):
                raise NotIncrementalError("NOT IN (an anti-join) is recomputed")
            elif isinstance(cond, exp.In) and cond.args.get("query") is not None:
                self._semi_in(select, cond)
            elif isinstance(cond, exp.Exists):
                scalar = self._semi_exists(select, cond)
                if scalar is not None:
                    scalars.append(scalar)
            elif (isinstance(cond, exp.EQ | exp.NEQ | exp.GT | exp.GTE | exp.LT | exp.LTE)
                  and (isinstance(cond.expression, exp.Subquery)
                       or isinstance(cond.this, exp.Subquery))):
                scalars.append(cond)
            else:
                raise NotIncrementalError(f"the subquery in {_short(_sql(cond))!r} is "
                                          "recomputed (only IN, EXISTS and comparisons with "
                                          "a scalar subquery are decorrelated)")
        select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
        return self._scalar_block(select, scalars) if scalars else select

    def _semi_join(self, select: exp.Select, inner_sql: str,
                   pairs: list[tuple[exp.Column, str]]) -> None:
        """Join ``select`` to the stage of ``inner_sql`` on each (outer column, its column)."""
        from sqlglot import exp

        table = self._table(inner_sql)
        alias = f"_s{len(self.stages)}"
        on = exp.and_(*(exp.EQ(this=col.copy(), expression=exp.column(k, alias))
                        for col, k in pairs))
        select.append("joins", exp.Join(this=exp.alias_(exp.to_table(table), alias, table=True),
                                        on=on))

    def _qualified(self, select: exp.Select, col: exp.Expression) -> exp.Column:
        from sqlglot import exp

        if not isinstance(col, exp.Column):
            raise NotIncrementalError(f"{_short(_sql(col))} IN (SELECT …) needs a column on "
                                      "its left to be decorrelated")
        if col.table:
            return col
        owners = [a for a, item in _aliases(select).items()
                  if col.name in self._columns_of(item)]
        if len(owners) != 1:
            raise NotIncrementalError(f"qualify the column {col.name!r} next to the subquery")
        return exp.column(col.name, owners[0])

    def _columns_of(self, item: exp.Expression) -> tuple[str, ...]:
        found = self.tables.get(item.name) if hasattr(item, "name") else None
        return found.columns if found is not None else ()

    def _semi_in(self, select: exp.Select, cond: exp.In) -> None:
        from sqlglot import exp

        col = self._qualified(select, cond.this)
        inner = _inner_select(cond.args["query"]).copy()
        if _outer_columns(inner):
            raise NotIncrementalError("a correlated IN subquery is recomputed")
        if len(inner.expressions) != 1:
            raise NotIncrementalError("an IN subquery selects one value")
        value = inner.expressions[0]
        value = value.this if isinstance(value, exp.Alias) else value
        inner.set("expressions", [exp.alias_(value, "k")])
        if _aggregates(inner):  # its rows may repeat: their distinct values in a stage more
            table = self.stage(inner)
            sql = f"SELECT DISTINCT x.k AS k FROM {table} AS x"
        else:
            inner.set("distinct", exp.Distinct())
            sql = _sql(self._block(inner))
        self._semi_join(select, sql, [(col, "k")])

    def _semi_exists(self, select: exp.Select, cond: exp.Exists) -> exp.Expression | None:
        """Join ``select`` to the distinct correlated columns of the EXISTS; without
        correlation, the comparison ``(SELECT COUNT(*) …) > 0`` to stage as a scalar."""
        from sqlglot import exp

        inner = _inner_select(cond).copy()
        if _aggregates(inner):
            raise NotIncrementalError("EXISTS over an aggregating subquery is recomputed")
        own = set(_aliases(inner))
        kept, pairs = [], []
        for part in _conjuncts(inner.args.get("where")):
            outer = [c for c in part.find_all(exp.Column) if c.table and c.table not in own]
            if not outer:
                kept.append(part)
                continue
            sides = (part.this, part.expression) if isinstance(part, exp.EQ) else ()
            if (len(sides) != 2 or not all(isinstance(s, exp.Column) for s in sides)
                    or sum(1 for s in sides if s.table in own or not s.table) != 1):
                raise NotIncrementalError(f"the correlation {_short(_sql(part))!r} is not an "
                                          "equality of an inner and an outer column "
                                          "(recomputed)")
            mine, theirs = sides if (sides[0].table in own or not sides[0].table) \
                else sides[::-1]
            pairs.append((mine, theirs))
        inner.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
        if _outer_columns(inner):
            raise NotIncrementalError("a correlation outside the EXISTS's WHERE is recomputed")
        if not pairs:
            inner.set("expressions", [exp.alias_(exp.Count(this=exp.Star()), "c")])
            return exp.GT(this=exp.Subquery(this=inner), expression=exp.Literal.number(0))
        inner.set("expressions", [exp.alias_(m.copy(), f"k{i}")
                                  for i, (m, _) in enumerate(pairs)])
        inner.set("distinct", exp.Distinct())
        sql = _sql(self._block(inner))
        self._semi_join(select, sql, [(self._qualified(select, t), f"k{i}")
                                      for i, (_, t) in enumerate(pairs)])
        return None

    def _scalar_block(self, select: exp.Select, scalars: list[exp.Expression]) -> exp.Select:
        """The stages of a block with scalar comparisons: its rows (every column it uses,
        and a constant), joined to each scalar's one row on the constant; the returned select
        (the last stage) computes its outputs over those with the comparisons as filters."""
        from sqlglot import exp

        if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star)
               for e in select.expressions):
            raise NotIncrementalError("name the outputs (no *) of a block with a scalar "
                                      "subquery")
        values: list[str] = []
        for cond in scalars:
            sub = cond.expression if isinstance(cond.expression, exp.Subquery) else cond.this
            inner = _inner_select(sub).copy()
            if _outer_columns(inner):
                raise NotIncrementalError("a correlated scalar subquery is recomputed")
            if inner.args.get("group") or len(inner.expressions) != 1 or not _aggregates(inner):
                raise NotIncrementalError("a scalar subquery must aggregate to one value "
                                          "without GROUP BY")
            value = inner.expressions[0]
            value = value.this if isinstance(value, exp.Alias) else value
            inner.set("expressions", [exp.alias_(value, "v"),
                                      exp.alias_(exp.Literal.number(1), "one_")])
            values.append(self.stage(inner))
            sub.replace(exp.column(f"v{len(values) - 1}", "j"))
        names: dict[tuple[str, str], str] = {}

        def rename(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column) and node.table != "j":
                col = self._qualified(select, node)
                key = (col.table, col.name)
                names.setdefault(key, f"c{len(names)}")
                return exp.column(names[key], "j")
            return node

        outputs = [e.transform(rename) for e in select.expressions]
        outputs = [exp.alias_(o, e.alias_or_name) if not isinstance(o, exp.Alias)
                   and e.alias_or_name else o for o, e in zip(outputs, select.expressions,
                                                                strict=True)]
        group = select.args.get("group")
        group = group.transform(rename) if group is not None else None
        conds = [c.transform(rename) for c in scalars]
        rows = select.copy()
        rows.set("expressions", [exp.alias_(exp.column(c, t), n) for (t, c), n in names.items()]
                 + [exp.alias_(exp.Literal.number(1), "one_")])
        rows.set("group", None)
        rows.set("distinct", None)
        pre = self._table(_sql(rows))
        joined = exp.select(*[exp.column(n, "p") for n in names.values()],
                            *[exp.alias_(exp.column("v", f"s{i}"), f"v{i}")
                              for i in range(len(values))]).from_(
            exp.alias_(exp.to_table(pre), "p", table=True))
        for i, table in enumerate(values):
            joined = joined.join(exp.alias_(exp.to_table(table), f"s{i}", table=True),
                                 on=f"p.one_ = s{i}.one_")
        top = exp.select(*outputs).from_(
            exp.alias_(exp.to_table(self._table(_sql(joined))), "j", table=True))
        top = top.where(exp.and_(*conds))
        if group is not None:
            top.set("group", group)
        if select.args.get("distinct") is not None:
            top.set("distinct", exp.Distinct())
        return top


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
