"""SQL text → the algebra of :mod:`aspen.sqlprov.algebra` (sqlglot, Spark SQL dialect).

One read-only statement: SELECT blocks with FROM (tables, subqueries with an alias), inner,
cross and LEFT joins, WHERE, GROUP BY with COUNT, SUM, MIN, MAX, AVG and HAVING, DISTINCT;
UNION [ALL], EXCEPT and INTERSECT; ORDER BY and LIMIT on the whole statement. In WHERE, a
conjunct ``EXISTS (…)``, ``NOT EXISTS (…)`` or ``x IN (SELECT …)`` becomes a semi or anti join;
a correlated subquery (one whose WHERE names the outer query's columns, in conjuncts) is
decorrelated: those conjuncts become the join's condition. Anything else is refused with one
line (:class:`~aspen.errors.ConfigError`). The size bounds and the allowlist of functions are
those of continuous queries (:mod:`aspen.queries.limits`).

>>> q = parse_sql("SELECT a.src FROM link a WHERE NOT EXISTS "
...               "(SELECT 1 FROM triggered t WHERE t.id = a.dst)")
>>> type(q.root.child).__name__, q.root.child.anti, q.names
('SemiJoin', True, ('src',))
>>> parse_sql("DELETE FROM link")
Traceback (most recent call last):
...
aspen.errors.ConfigError: expected one read-only SELECT statement, got 'DELETE FROM link'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aspen.errors import ConfigError
from aspen.queries import limits
from aspen.queries.limits import AGGREGATES, ALLOWED_CAST_TYPES, ALLOWED_FUNCTIONS
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
)
from aspen.sqlprov.tables import SQL_TABLES, SqlTable

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["DIALECT", "parse_sql"]

#: The dialect the SQL is read in (as continuous queries are).
DIALECT = "spark"

#: The node kinds a statement may contain besides allowed functions and aggregates.
_NODES = frozenset({
    "Select", "From", "Join", "Table", "TableAlias", "Identifier", "Column", "Star", "Alias",
    "Where", "Group", "Having", "Distinct", "Literal", "Null", "Boolean", "Paren", "Tuple",
    "DataType", "DataTypeParam", "Var", "Interval", "IntervalSpan", "And", "Or", "Not", "Xor",
    "EQ", "NEQ", "GT", "GTE", "LT", "LTE", "NullSafeEQ", "NullSafeNEQ", "Is", "In", "Between",
    "Like", "ILike", "Add", "Sub", "Mul", "Div", "IntDiv", "Mod", "Neg", "BitwiseNot", "DPipe",
    "Subquery", "Exists", "Union", "Except", "Intersect", "Order", "Ordered", "Limit",
})
#: The SELECT clauses a block may have (ORDER BY and LIMIT: the statement's, taken off first).
_CLAUSES = frozenset({"expressions", "from_", "joins", "where", "group", "having", "distinct"})


def _text(node: exp.Expression, limit: int = 60) -> str:
    text = " ".join(node.sql(dialect=DIALECT).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_sql(sql: str, tables: Mapping[str, SqlTable] | None = None) -> Query:
    """Parse one read-only statement into a :class:`~aspen.sqlprov.algebra.Query`;
    :class:`~aspen.errors.ConfigError` when it is not one or uses what is not supported.

    >>> q = parse_sql("SELECT src, COUNT(*) AS n FROM link GROUP BY src HAVING COUNT(*) >= 2")
    >>> q.names, q.root.child.threshold
    (('src', 'n'), 2)
    """
    statement = _statement(sql)
    try:
        return _Parser(SQL_TABLES if tables is None else tables).query(statement)
    except RecursionError:
        raise ConfigError("the SQL nests too deeply to analyse: write it shorter") from None


def _statement(sql: str) -> exp.Expression:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, SqlglotError

    limits.check_text(sql)
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except ParseError as err:
        first = err.errors[0] if err.errors else {}
        where = (f" at line {first.get('line')}, column {first.get('col')} (near "
                 f"{first.get('highlight')!r})") if first else ""
        raise ConfigError(f"the SQL does not parse{where}") from None
    except SqlglotError as err:
        raise ConfigError(f"the SQL does not parse: {str(err).splitlines()[0]}") from None
    if len(statements) != 1:
        raise ConfigError(f"expected one read-only SELECT statement, got {len(statements)}")
    statement = statements[0]
    if not isinstance(statement, exp.Select | exp.SetOperation):
        raise ConfigError(f"expected one read-only SELECT statement, got {_text(statement)!r}")
    limits.check_size(statement)
    for node in statement.walk():
        _check_node(node)
    return statement


def _check_node(node: exp.Expression) -> None:
    from sqlglot import exp

    kind = type(node).__name__
    if kind in _NODES:
        return
    if isinstance(node, exp.AggFunc):
        if node.sql_name() not in AGGREGATES:
            raise ConfigError(f"aggregate {node.sql_name()} is not supported (supported: "
                              f"{', '.join(AGGREGATES)})")
        return
    if isinstance(node, exp.Func) and kind in ALLOWED_FUNCTIONS:
        if isinstance(node, exp.Cast):
            to = node.args.get("to")
            name = to.this.name if isinstance(to, exp.DataType) else str(to)
            if name not in ALLOWED_CAST_TYPES:
                raise ConfigError(f"CAST to {name} is not allowed (plain types only)")
        return
    raise ConfigError(f"{_text(node)!r} ({kind}) is not supported in a provenance query "
                      "(docs/sql-provenance.md)")


@dataclass
class _Rel:
    """A relation in scope: its columns (user name → flat name; None: ambiguous)."""

    label: str
    columns: dict[str, str | None]
    star: tuple[str, ...]


@dataclass
class _Scope:
    rels: dict[str, _Rel] = field(default_factory=dict)
    parent: _Scope | None = None


def _conjuncts(node: exp.Expression | None) -> Iterator[exp.Expression]:
    from sqlglot import exp

    if node is None:
        return
    if isinstance(node, exp.Where | exp.Having | exp.Paren):
        yield from _conjuncts(node.this)
    elif isinstance(node, exp.And):
        yield from _conjuncts(node.this)
        yield from _conjuncts(node.expression)
    else:
        yield node


def _and(conditions: list[exp.Expression]) -> exp.Expression | None:
    from sqlglot import exp

    return exp.and_(*conditions) if conditions else None


class _Parser:
    def __init__(self, tables: Mapping[str, SqlTable]) -> None:
        self.tables = tables
        self.counter = 0
        self.prefixes: set[str] = set()

    def fresh(self, kind: str) -> str:
        self.counter += 1
        return f"_{kind}{self.counter}"

    # -- the statement -------------------------------------------------------------------------
    def query(self, statement: exp.Expression) -> Query:
        from sqlglot import exp

        statement = statement.copy()
        order, limit = statement.args.get("order"), statement.args.get("limit")
        statement.set("order", None)
        statement.set("limit", None)
        if statement.args.get("offset") is not None:
            raise ConfigError("OFFSET is not supported")
        items = statement.expressions if isinstance(statement, exp.Select) else []
        node, names = self.statement(statement, None)
        ordered: list[tuple[int, bool]] = []
        for item in (order.expressions if order is not None else []):
            index = self._order_index(item.this, names, items)
            ordered.append((index, bool(item.args.get("desc"))))
        count = None
        if limit is not None:
            value = limit.expression
            if not (isinstance(value, exp.Literal) and not value.is_string
                    and value.this.isdigit()):
                raise ConfigError(f"LIMIT must be a whole number, got {_text(value)!r}")
            count = int(value.this)
        return Query(_pruned(node, _referenced(node)), names, tuple(ordered), count)

    @staticmethod
    def _order_index(key: exp.Expression, names: tuple[str, ...],
                     items: list[exp.Expression]) -> int:
        from sqlglot import exp

        if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit():
            index = int(key.this) - 1
            if 0 <= index < len(names):
                return index
        if isinstance(key, exp.Column) and not key.table and key.name.lower() in names:
            return names.index(key.name.lower())
        text = key.sql(dialect=DIALECT).lower()
        for i, item in enumerate(items):
            inner = item.this if isinstance(item, exp.Alias) else item
            if inner.sql(dialect=DIALECT).lower() == text:
                return i
        raise ConfigError(f"ORDER BY {_text(key)!r}: order by an output column, its name or "
                          "its position")

    def statement(self, node: exp.Expression, parent: _Scope | None
                  ) -> tuple[Node, tuple[str, ...]]:
        """A SELECT block or set operation (uncorrelated): its node and its column names."""
        from sqlglot import exp

        if isinstance(node, exp.Subquery):
            return self.statement(node.this, parent)
        if isinstance(node, exp.SetOperation):
            return self._set_operation(node)
        if isinstance(node, exp.Select):
            block = self._block(node, parent)
            if block.correlated:
                raise ConfigError("a correlated subquery is supported only in EXISTS, NOT EXISTS "
                                  "or IN, in a conjunct of WHERE")
            return self._finish(node, block)
        raise ConfigError(f"expected a SELECT, got {_text(node)!r}")

    def _set_operation(self, node: exp.SetOperation) -> tuple[Node, tuple[str, ...]]:
        from sqlglot import exp

        word = type(node).__name__.upper()
        for key in ("order", "limit", "by_name", "side", "kind", "on"):
            if node.args.get(key):
                raise ConfigError(f"{word}: ORDER BY and LIMIT only at the end of the whole "
                                  "statement; BY NAME, outer and CORRESPONDING forms are not "
                                  "supported")
        distinct = node.args.get("distinct") is not False
        if not distinct and not isinstance(node, exp.Union):
            raise ConfigError(f"{word} ALL is not supported (write {word})")
        left, names = self.statement(node.this, None)
        right, right_names = self.statement(node.expression, None)
        if len(names) != len(right_names):
            raise ConfigError(f"{word}: the two sides have {len(names)} and {len(right_names)} "
                              "columns")
        op = {"Union": "union_all", "Except": "except", "Intersect": "intersect"}[
            type(node).__name__]
        out: Node = SetOp(left, right, op, tuple(self.fresh("u") for _ in names))
        if op == "union_all" and distinct:
            out = Distinct(out)
        return out, names

    # -- one block -----------------------------------------------------------------------------
    def _block(self, select: exp.Select, parent: _Scope | None) -> _Block:
        for key, value in select.args.items():
            if key not in _CLAUSES and value not in (None, [], False):
                word = {"order": "ORDER BY", "limit": "LIMIT", "with_": "WITH"}.get(
                    key, key.upper())
                raise ConfigError(f"{word} is not supported here (ORDER BY and LIMIT: at the "
                                  "end of the whole statement)")
        scope = _Scope(parent=parent)
        if select.args.get("from_") is None:
            raise ConfigError("a SELECT needs FROM and at least one table")
        node = self._from_item(select.args["from_"].this, scope)
        for join in select.args.get("joins") or []:
            node = self._join(node, join, scope)
        block = _Block(node, scope)
        for conjunct in _conjuncts(select.args.get("where")):
            self._where(conjunct, block)
        return block

    def _from_item(self, item: exp.Expression, scope: _Scope) -> Node:
        from sqlglot import exp

        if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
            if item.args.get("db") is not None or item.args.get("catalog") is not None:
                raise ConfigError(f"table {_text(item)!r}: qualified names are not supported "
                                  "(every table is under the lake root)")
            name = item.name.lower()
            table = self.tables.get(name)
            if table is None:
                raise ConfigError(f"unknown table {name!r}; known tables: "
                                  f"{', '.join(self.tables)}")
            alias = (item.alias or name).lower()
            prefix, n = alias, 1
            while prefix in self.prefixes:  # one prefix per occurrence in the whole statement
                n += 1
                prefix = f"{alias}_{n}"
            self.prefixes.add(prefix)
            scan = Scan(name, prefix, table.columns)
            self._add(scope, alias, _Rel(name, dict(zip(table.columns, scan.outputs,
                                                         strict=True)), table.star))
            return scan
        if isinstance(item, exp.Subquery):
            if not item.alias:
                raise ConfigError(f"a subquery in FROM needs an alias: ({_text(item.this, 40)}) "
                                  "AS q")
            node, names = self.statement(item.this, None)
            columns: dict[str, str | None] = {}
            for name, flat in zip(names, node.outputs, strict=True):
                columns[name] = None if name in columns else flat
            self._add(scope, item.alias.lower(), _Rel(item.alias.lower(), columns, names))
            return node
        raise ConfigError(f"FROM names tables and subqueries only, not {_text(item)!r}")

    @staticmethod
    def _add(scope: _Scope, alias: str, rel: _Rel) -> None:
        if alias in scope.rels:
            raise ConfigError(f"{alias!r} names two relations: give each occurrence its own "
                              "alias")
        scope.rels[alias] = rel

    def _join(self, node: Node, join: exp.Join, scope: _Scope) -> Node:
        side, kind = join.text("side").upper(), join.text("kind").upper()
        if side not in ("", "LEFT") or kind not in ("", "INNER", "CROSS", "OUTER"):
            raise ConfigError(f"{' '.join(w for w in (side, kind) if w)} JOIN is not supported "
                              "(inner, cross and LEFT joins)")
        if join.text("method") or join.args.get("using"):
            raise ConfigError("NATURAL JOIN and JOIN … USING are not supported: write JOIN … ON")
        right = self._from_item(join.this, scope)
        on = join.args.get("on")
        condition = None
        if on is not None:
            self._no_subquery(on)
            condition, depth = self.resolve(on, scope)
            if depth:
                raise ConfigError(f"ON {_text(on)!r} names a column of an outer query")
        if side == "LEFT":
            if condition is None:
                raise ConfigError("LEFT JOIN needs ON")
            return Join(node, right, "left", condition)
        return Join(node, right, "inner", condition)

    # -- WHERE ---------------------------------------------------------------------------------
    def _where(self, conjunct: exp.Expression, block: _Block) -> None:
        from sqlglot import exp

        negated, inner = False, conjunct
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Not):
            negated, inner = True, inner.this
            while isinstance(inner, exp.Paren):
                inner = inner.this
        if isinstance(inner, exp.Exists):
            block.semi.append(self._semi(inner.this, block.scope, negated, None))
            return
        if isinstance(inner, exp.In) and inner.args.get("query") is not None:
            if negated:
                raise ConfigError("NOT IN (subquery) is not supported (it differs from NOT EXISTS "
                                  "on NULLs): write NOT EXISTS (… WHERE … = …)")
            self._no_subquery(inner.this)
            probe, depth = self.resolve(inner.this, block.scope)
            if depth:
                raise ConfigError(f"{_text(inner.this)!r}: IN's left side names a column of an "
                                  "outer query")
            block.semi.append(self._semi(inner.args["query"].this, block.scope, False, probe))
            return
        self._no_subquery(conjunct)
        condition, depth = self.resolve(conjunct, block.scope)
        (block.correlated if depth else block.filters).append(condition)

    def _semi(self, sub: exp.Expression, scope: _Scope, anti: bool,
              probe: exp.Expression | None) -> tuple[Node, exp.Expression | None, bool]:
        from sqlglot import exp

        while isinstance(sub, exp.Subquery):
            sub = sub.this
        word = "NOT EXISTS" if anti else ("IN" if probe is not None else "EXISTS")
        if isinstance(sub, exp.Select):
            block = self._block(sub, scope)
            if block.correlated:
                simple = not any(sub.args.get(k) for k in ("group", "having", "distinct")) and \
                    not any(e.find(exp.AggFunc) for e in sub.expressions)
                if not simple:
                    raise ConfigError(f"{word}: a correlated subquery must be one SELECT … FROM … "
                                      "WHERE block (no GROUP BY, HAVING, DISTINCT or aggregates)")
                conditions = list(block.correlated)
                right = block.filtered()
                if probe is not None:
                    outputs = self._items(sub, block.scope)
                    if len(outputs) != 1:
                        raise ConfigError(f"{word}: the subquery must select one column")
                    conditions.append(exp.EQ(this=probe, expression=outputs[0][1]))
                return right, _and(conditions), anti
            right, _ = self._finish(sub, block)
        else:
            right, _ = self.statement(sub, None)
        condition = None
        if probe is not None:
            if len(right.outputs) != 1:
                raise ConfigError(f"{word}: the subquery must select one column")
            condition = exp.EQ(this=probe, expression=exp.column(right.outputs[0]))
        return right, condition, anti

    # -- SELECT list, grouping -----------------------------------------------------------------
    def _finish(self, select: exp.Select, block: _Block) -> tuple[Node, tuple[str, ...]]:
        from sqlglot import exp

        node = block.filtered()
        items = self._items(select, block.scope)
        having = select.args.get("having")
        aggregated = bool(select.args.get("group")) or having is not None or any(
            e.find(exp.AggFunc) for _, e in items)
        if aggregated:
            node, items = self._aggregate(node, select, block.scope, items)
        names = tuple(name for name, _ in items)
        out: Node = Project(node, tuple((self.fresh("o"), e) for _, e in items))
        distinct = select.args.get("distinct")
        if distinct is not None:
            if distinct.args.get("on") is not None:
                raise ConfigError("DISTINCT ON is not supported")
            out = Distinct(out)
        return out, names

    def _items(self, select: exp.Select, scope: _Scope) -> list[tuple[str, exp.Expression]]:
        from sqlglot import exp

        out: list[tuple[str, exp.Expression]] = []
        for i, item in enumerate(select.expressions):
            if isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                              and isinstance(item.this, exp.Star)):
                rels = scope.rels.items()
                if isinstance(item, exp.Column):
                    alias = item.table.lower()
                    if alias not in scope.rels:
                        raise ConfigError(f"unknown relation {alias!r} in {_text(item)!r}")
                    rels = [(alias, scope.rels[alias])]
                for _, rel in rels:
                    for name in rel.star:
                        flat = rel.columns[name]
                        if flat is None:
                            raise ConfigError(f"column {name!r} of {rel.label} is ambiguous")
                        out.append((name, exp.column(flat)))
                continue
            self._no_subquery(item)
            inner = item.this if isinstance(item, exp.Alias) else item
            resolved, depth = self.resolve(inner, scope)
            if depth:
                raise ConfigError(f"{_text(item)!r} names a column of an outer query")
            if isinstance(item, exp.Alias):
                name = item.alias.lower()
            elif isinstance(item, exp.Column):
                name = item.name.lower()
            else:
                name = f"_c{i}"
            out.append((name, resolved))
        return out

    def _aggregate(self, node: Node, select: exp.Select, scope: _Scope,
                   items: list[tuple[str, exp.Expression]]
                   ) -> tuple[Node, list[tuple[str, exp.Expression]]]:
        from sqlglot import exp

        group: list[tuple[str, exp.Expression]] = []
        by_text: dict[str, str] = {}
        group_clause = select.args.get("group")
        for g in (group_clause.expressions if group_clause is not None else []):
            self._no_subquery(g)
            if isinstance(g, exp.Literal) and not g.is_string and g.this.isdigit():
                index = int(g.this) - 1
                if not 0 <= index < len(items):
                    raise ConfigError(f"GROUP BY {g.this}: no such output column")
                resolved = items[index][1]
            else:
                resolved, depth = self.resolve(g, scope)
                if depth:
                    raise ConfigError(f"GROUP BY {_text(g)!r} names a column of an outer query")
            key = resolved.sql(dialect=DIALECT)
            if key not in by_text:
                by_text[key] = self.fresh("g")
                group.append((by_text[key], resolved))
        aggregates: list[tuple[str, exp.Expression]] = []
        by_agg: dict[str, str] = {}

        def replace(e: exp.Expression) -> exp.Expression:
            key = e.sql(dialect=DIALECT)
            if key in by_text:
                return exp.column(by_text[key])
            if isinstance(e, exp.AggFunc):
                if any(isinstance(a, exp.AggFunc) for a in e.find_all(exp.AggFunc) if a is not e):
                    raise ConfigError(f"{_text(e)!r}: aggregates do not nest")
                if key not in by_agg:
                    by_agg[key] = self.fresh("a")
                    aggregates.append((by_agg[key], e))
                return exp.column(by_agg[key])
            return e

        outputs = set(by_text.values())
        new_items = []
        for name, e in items:
            replaced = e.transform(replace)
            self._grouped(replaced, outputs | set(by_agg.values()), name)
            new_items.append((name, replaced))
        having, threshold = None, None
        clause = select.args.get("having")
        if clause is not None:
            self._no_subquery(clause.this)
            resolved, depth = self.resolve(clause.this, scope)
            if depth:
                raise ConfigError("HAVING names a column of an outer query")
            having = resolved.transform(replace)
            self._grouped(having, outputs | set(by_agg.values()), "HAVING")
            threshold = _threshold(having, {n for n, a in aggregates if _counts_rows(a)})
        return Aggregate(node, tuple(group), tuple(aggregates), having, threshold), new_items

    @staticmethod
    def _grouped(e: exp.Expression, allowed: set[str], where: str) -> None:
        from sqlglot import exp

        for col in e.find_all(exp.Column):
            if col.name not in allowed:
                raise ConfigError(f"{where}: a column that is neither grouped nor aggregated "
                                  "(put it in GROUP BY or in an aggregate)")

    # -- names ---------------------------------------------------------------------------------
    def resolve(self, node: exp.Expression, scope: _Scope) -> tuple[exp.Expression, int]:
        """A copy of ``node`` over flat column names; the deepest outer scope it names (0: its
        own)."""
        from sqlglot import exp

        depth = 0

        def one(n: exp.Expression) -> exp.Expression:
            nonlocal depth
            if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
                flat, level = self._column(n, scope)
                depth = max(depth, level)
                return exp.column(flat)
            return n

        return node.copy().transform(one), depth

    def _column(self, col: exp.Column, scope: _Scope) -> tuple[str, int]:
        if col.args.get("db") is not None or col.args.get("catalog") is not None:
            raise ConfigError(f"column {_text(col)!r}: expected column or alias.column")
        name, alias = col.name.lower(), col.table.lower()
        level, current = 0, scope
        while current is not None:
            if alias:
                rel = current.rels.get(alias)
                owners = [rel] if rel is not None else []
                if rel is not None and name not in rel.columns:
                    raise ConfigError(f"{alias} ({rel.label}) has no column {name!r}; its "
                                      f"columns: {', '.join(rel.columns)}")
            else:
                owners = [r for r in current.rels.values() if name in r.columns]
                if len(owners) > 1:
                    raise ConfigError(f"column {name!r} is ambiguous: qualify it as alias.{name}")
            if owners:
                flat = owners[0].columns[name]
                if flat is None:
                    raise ConfigError(f"column {name!r} of {owners[0].label} is ambiguous")
                if level > 1:
                    raise ConfigError(f"column {_text(col)!r} names a query two levels out "
                                      "(correlate with the enclosing query only)")
                return flat, level
            current, level = current.parent, level + 1
        shown = f"{alias}.{name}" if alias else name
        raise ConfigError(f"unknown column {shown!r}")

    @staticmethod
    def _no_subquery(node: exp.Expression) -> None:
        from sqlglot import exp

        for n in node.walk():
            if isinstance(n, exp.Select | exp.Subquery | exp.Exists | exp.SetOperation):
                raise ConfigError("a subquery may be a FROM item or a conjunct of WHERE "
                                  "(EXISTS, NOT EXISTS, IN), nowhere else")


@dataclass
class _Block:
    """FROM and WHERE of one block: the joined node, its filters, semi and anti joins, and
    the conjuncts naming the enclosing query."""

    node: Node
    scope: _Scope
    filters: list[exp.Expression] = field(default_factory=list)
    semi: list[tuple[Node, exp.Expression | None, bool]] = field(default_factory=list)
    correlated: list[exp.Expression] = field(default_factory=list)

    def filtered(self) -> Node:
        node = self.node
        condition = _and(self.filters)
        if condition is not None:
            node = Filter(node, condition)
        for right, on, anti in self.semi:
            node = SemiJoin(node, right, on, anti)
        return node


def _expressions(node: Node) -> Iterator[exp.Expression]:
    """Every expression of ``node`` and below."""
    from aspen.sqlprov.algebra import children

    if isinstance(node, Filter):
        yield node.condition
    elif isinstance(node, Project):
        yield from (e for _, e in node.items)
    elif isinstance(node, Join | SemiJoin) and node.condition is not None:
        yield node.condition
    elif isinstance(node, Aggregate):
        yield from (e for _, e in node.group + node.aggregates)
        if node.having is not None:
            yield node.having
    for child in children(node):
        yield from _expressions(child)


def _referenced(node: Node) -> set[str]:
    from sqlglot import exp

    return {c.name for e in _expressions(node) for c in e.find_all(exp.Column)}


def _pruned(node: Node, used: set[str]) -> Node:
    """``node`` with every scan reading only the columns some expression names (at least one)."""
    from dataclasses import replace

    if isinstance(node, Scan):
        kept = tuple(c for c, o in zip(node.columns, node.outputs, strict=True) if o in used)
        return replace(node, columns=kept or node.columns[:1])
    if isinstance(node, Join | SemiJoin | SetOp):
        return replace(node, left=_pruned(node.left, used), right=_pruned(node.right, used))
    return replace(node, child=_pruned(node.child, used))


def _counts_rows(aggregate: exp.Expression) -> bool:
    """Whether ``aggregate`` is COUNT(*) (or COUNT of a non-null literal)."""
    from sqlglot import exp

    if not isinstance(aggregate, exp.Count) or aggregate.args.get("distinct"):
        return False
    arg = aggregate.this
    return isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not arg.is_string)


def _threshold(having: exp.Expression, counts: set[str]) -> int | None:
    """k when ``having`` is exactly COUNT(*) >= k (or > k-1, k <= COUNT(*), k-1 < COUNT(*)).

    >>> import sqlglot
    >>> _threshold(sqlglot.parse_one("2 < n"), {"n"}), _threshold(sqlglot.parse_one("n > 2 AND "
    ...     "n < 9"), {"n"})
    (3, None)
    """
    from sqlglot import exp

    while isinstance(having, exp.Paren):
        having = having.this
    if not isinstance(having, exp.GTE | exp.GT | exp.LTE | exp.LT):
        return None
    left, right = having.this, having.expression
    if isinstance(having, exp.LTE | exp.LT):  # k <= COUNT(*): the count on the left
        left, right = right, left
    if not (isinstance(left, exp.Column) and left.name in counts):
        return None
    if not (isinstance(right, exp.Literal) and not right.is_string and right.this.isdigit()):
        return None
    k = int(right.this)
    return k + 1 if isinstance(having, exp.GT | exp.LT) else k
