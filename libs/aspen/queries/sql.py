"""A registered query's SQL → its join graph (:class:`~aspen.optimizer.query.Query`) and its
execution spec (:class:`~aspen.queries.spec.ExecSpec`), parsed with sqlglot (Spark SQL).

One SELECT block over the lake's tables (:func:`aspen.queries.tables.known_tables`):
``FROM t1 a, t2 b`` or ``t1 a JOIN t2 b ON …`` (inner joins), a WHERE of conditions joined by
AND, optionally GROUP BY with COUNT, SUM, MIN, MAX, AVG, and DISTINCT. Each condition (of WHERE
and of every ON) is either an equality of two columns of two relations — a join predicate — or
a condition on one relation's columns — a filter of that relation, kept as SQL text. Anything
else is refused with a :class:`~aspen.errors.ConfigError` of one line: subqueries, outer joins,
OR or inequalities across relations, HAVING, ORDER BY, LIMIT, window functions, unknown or
ambiguous names.

>>> p = parse_query("hot", '''SELECT a.src, COUNT(*) AS n FROM link a JOIN sensor s
...     ON s.id = a.dst WHERE a.cost > 2 GROUP BY a.src''')
>>> [j.id for j in p.query.joins], [f.id for f in p.query.filters]
(['a.dst=s.id'], ['a: cost > 2'])
>>> [(o.name, o.sql) for o in p.spec.outputs], p.spec.group_by
([('src', 'a__src'), ('n', 'COUNT(*)')], ('a__src',))
>>> parse_query("x", "SELECT a.src FROM link a, link b WHERE a.dst = b.src OR b.cost > 1")
Traceback (most recent call last):
...
aspen.errors.ConfigError: query 'x': condition 'a.dst = b.src OR b.cost > 1' combines \
relations a, b with OR (only AND of equality joins and one-relation filters is supported)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aspen.errors import ConfigError
from aspen.optimizer.query import Filter, JoinPredicate, Query
from aspen.queries import limits
from aspen.queries.limits import AGGREGATES, MAX_RELATIONS
from aspen.queries.names import check_name, flat_name, is_identifier
from aspen.queries.spec import DIALECT, ExecSpec, OutputSpec, ParsedQuery, RelationSpec
from aspen.queries.tables import TableColumns, known_tables

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["AGGREGATES", "parse_query"]

#: The SELECT clauses a query may have; any other is refused, named as below.
_ALLOWED_CLAUSES = frozenset({"expressions", "from_", "joins", "where", "group", "distinct"})
_CLAUSE_WORDS = {
    "having": "HAVING", "order": "ORDER BY", "limit": "LIMIT", "offset": "OFFSET",
    "qualify": "QUALIFY", "windows": "WINDOW", "laterals": "LATERAL VIEW", "sort": "SORT BY",
    "cluster": "CLUSTER BY", "distribute": "DISTRIBUTE BY", "into": "INTO",
    "pivots": "PIVOT", "hint": "hints", "sample": "TABLESAMPLE",
}


class _Refused(ConfigError):
    """Raised inside the parser; :func:`parse_query` prefixes the query's name."""


def _bounded(check: Callable[[Any], None], value: Any) -> None:
    """Run a check of :mod:`aspen.queries.limits`, its refusal as :class:`_Refused`."""
    try:
        check(value)
    except ConfigError as err:
        raise _Refused(str(err)) from None


def _text(node: exp.Expression, limit: int = 100) -> str:
    """An expression as one line of SQL, shortened."""
    text = " ".join(node.sql(dialect=DIALECT).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_query(name: str, sql: str,
                tables: Mapping[str, TableColumns] | None = None) -> ParsedQuery:
    """Parse the query ``name`` (its SQL text) against ``tables`` (default: the lake's base
    tables and views); :class:`~aspen.errors.ConfigError` when it is not supported.

    >>> p = parse_query("q", "SELECT s.id FROM sensor s, triggered t WHERE s.id = t.id")
    >>> p.query.relations, p.tables
    ({'s': 'sensor', 't': 'triggered'}, ('sensor', 'triggered'))
    """
    check_name(name)
    try:
        return _Parser(name, sql, known_tables() if tables is None else tables).parse()
    except _Refused as err:
        raise ConfigError(f"query {name!r}: {err}") from None
    except RecursionError:  # the last resort: the bounds should refuse such SQL first
        raise ConfigError(f"query {name!r}: the SQL nests too deeply to analyse: write it "
                          "shorter") from None


def _one_select(sql: str) -> exp.Select:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, SqlglotError

    _bounded(limits.check_text, sql)  # size, bracket depth: before the (recursive) parser
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except ParseError as err:
        first = err.errors[0] if err.errors else {}
        where = (f" at line {first.get('line')}, column {first.get('col')} (near "
                 f"{first.get('highlight')!r})") if first else ""
        raise _Refused(f"the SQL does not parse{where}") from None
    except SqlglotError as err:  # the tokenizer: an unclosed quote, a stray character
        raise _Refused(f"the SQL does not parse: {str(err).splitlines()[0]}") from None
    if not statements:
        raise _Refused("the SQL is empty")
    if len(statements) != 1:
        raise _Refused(f"expected one SELECT statement, got {len(statements)}")
    statement = statements[0]
    _bounded(limits.check_size, statement)  # before anything walks the tree recursively
    if isinstance(statement, exp.SetOperation):
        raise _Refused("a query is one SELECT block (UNION, INTERSECT, EXCEPT are not supported)")
    if not isinstance(statement, exp.Select):
        raise _Refused(f"expected a SELECT statement, got {_text(statement, 40)!r}")
    return statement


@dataclass
class _Relation:
    alias: str
    table: str
    columns: TableColumns


class _Parser:
    """One parse: the relations in scope, then outputs, conditions and grouping."""

    def __init__(self, name: str, sql: str, tables: Mapping[str, TableColumns]) -> None:
        self.name = name
        self.sql = sql
        self.tables = tables
        self.select = _one_select(sql)
        self.relations: dict[str, _Relation] = {}

    # -- the whole statement -----------------------------------------------------------------

    def parse(self) -> ParsedQuery:
        from sqlglot import exp

        self._refuse_unsupported()
        _bounded(limits.check_allowed, self.select)
        ons = self._read_relations()
        outputs = self._outputs()
        conditions = list(self._conjuncts(self.select.args.get("where")))
        for on in ons:
            conditions.extend(self._conjuncts(on))
        joins: set[JoinPredicate] = set()
        filters: dict[str, list[str]] = {alias: [] for alias in self.relations}
        for condition in conditions:
            kind, value = self._classify(self._qualified(condition))
            if kind == "join":
                joins.add(value)
            elif value[1] not in filters[value[0]]:
                filters[value[0]].append(value[1])
        group = self._group_by(outputs)
        aggregated = bool(group) or any(self._aggregates(e) for _, e in outputs)
        if aggregated:
            self._check_grouping(outputs, group)
        used: dict[str, set[str]] = {alias: set() for alias in self.relations}
        for pred in joins:
            for column in (pred.left, pred.right):
                alias, col = column.split(".", 1)
                used[alias].add(col)
        for node in [e for _, e in outputs] + group:
            for col in node.find_all(exp.Column):
                used[col.table].add(col.name)
        query = Query(
            {a: r.table for a, r in self.relations.items()}, tuple(sorted(joins)),
            tuple(Filter(a, f) for a in self.relations for f in filters[a]), name=self.name)
        spec = ExecSpec(
            tuple(RelationSpec(a, r.table, tuple(sorted(used[a])), tuple(filters[a]))
                  for a, r in self.relations.items()),
            tuple(OutputSpec(n, self._flat(e).sql(dialect=DIALECT), bool(self._aggregates(e)))
                  for n, e in outputs),
            tuple(self._flat(g).sql(dialect=DIALECT) for g in group),
            self.select.args.get("distinct") is not None)
        return ParsedQuery(self.name, self.sql, query, spec)

    def _refuse_unsupported(self) -> None:
        from sqlglot import exp

        if self.select.args.get("with_") is not None:
            raise _Refused("WITH (a common table expression) is not supported: write one "
                           "SELECT block over the lake's tables")
        for key, value in self.select.args.items():
            if key not in _ALLOWED_CLAUSES and value not in (None, [], False):
                word = _CLAUSE_WORDS.get(key, key.upper())
                raise _Refused(f"{word} is not supported (a continuous query's result is a "
                               "table: one SELECT … FROM … WHERE … GROUP BY block)")
        distinct = self.select.args.get("distinct")
        if distinct is not None and distinct.args.get("on") is not None:
            raise _Refused("DISTINCT ON is not supported")
        for node in self.select.walk():
            if node is not self.select and isinstance(
                    node, exp.Select | exp.Subquery | exp.Exists | exp.SetOperation):
                raise _Refused("subqueries are not supported in a registered query (nested "
                              "queries compile into incremental stages in process only; "
                              "docs/queries.md, Nested queries)")
            if isinstance(node, exp.Window):
                raise _Refused(f"window functions are not supported ({_text(node, 60)!r})")
        if self.select.args.get("from_") is None:
            raise _Refused("a query needs FROM and at least one table")

    # -- FROM and JOIN -----------------------------------------------------------------------

    def _read_relations(self) -> list[exp.Expression]:
        """Fill :attr:`relations` from FROM and JOIN; the ON conditions of the joins."""
        count = 1 + len(self.select.args.get("joins") or [])
        if count > MAX_RELATIONS:
            raise _Refused(f"the query joins {count} relations (at most {MAX_RELATIONS})")
        self._add_relation(self.select.args["from_"].this)
        ons: list[exp.Expression] = []
        for join in self.select.args.get("joins") or []:
            side, kind = join.text("side").upper(), join.text("kind").upper()
            if side:
                raise _Refused(f"{side} OUTER JOIN is not supported (inner joins only)")
            if kind not in ("", "INNER", "CROSS"):
                raise _Refused(f"{kind} JOIN is not supported (inner joins only)")
            if join.text("method"):
                raise _Refused(f"{join.text('method').upper()} JOIN is not supported: "
                               "write JOIN … ON")
            if join.args.get("using"):
                raise _Refused("JOIN … USING is not supported: write JOIN … ON a.x = b.x")
            self._add_relation(join.this)
            if join.args.get("on") is not None:
                ons.append(join.args["on"])
        tables = {r.table for r in self.relations.values()}
        for alias, rel in self.relations.items():
            if alias in tables and alias != rel.table:
                raise _Refused(f"alias {alias!r} of table {rel.table} is the name of another "
                               "table of the query: choose another alias")
        return ons

    def _add_relation(self, node: exp.Expression) -> None:
        from sqlglot import exp

        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            raise _Refused(f"FROM and JOIN name tables only, not {_text(node, 60)!r}")
        if node.args.get("db") is not None or node.args.get("catalog") is not None:
            raise _Refused(f"table {_text(node, 60)!r}: qualified table names are not supported "
                           "(every table is under the lake root)")
        table = node.name.lower()
        if table not in self.tables:
            raise _Refused(f"unknown table {table!r}; known tables: {', '.join(self.tables)}")
        alias = (node.alias or table).lower()
        if alias in self.relations:
            what = "appears twice: give each occurrence its own alias" if alias == table else \
                "names two relations"
            raise _Refused(f"{'table' if alias == table else 'alias'} {alias!r} {what}")
        self.relations[alias] = _Relation(alias, table, self.tables[table])

    # -- names -------------------------------------------------------------------------------

    def _resolve(self, col: exp.Column) -> exp.Column:
        """``col`` qualified by its relation's alias (names lower-cased)."""
        from sqlglot import exp

        if col.args.get("db") is not None or col.args.get("catalog") is not None:
            raise _Refused(f"column {_text(col, 60)!r}: expected column or alias.column")
        name = col.name.lower()
        if col.table:
            alias = col.table.lower()
            rel = self.relations.get(alias)
            if rel is None:
                known = ", ".join(self.relations)
                called = [a for a, r in self.relations.items() if r.table == alias]
                hint = f" (table {alias} is called {called[0]!r} here)" if called else ""
                raise _Refused(f"unknown relation {alias!r} in {_text(col)!r}{hint}; the "
                               f"query's relations: {known}")
            if name not in rel.columns.columns:
                raise _Refused(f"table {rel.table} ({alias}) has no column {name!r}; its "
                               f"columns: {', '.join(rel.columns.columns)}")
            return exp.column(name, table=alias)
        owners = [a for a, r in self.relations.items() if name in r.columns.columns]
        if not owners:
            raise _Refused(f"unknown column {name!r} (in none of the query's tables: "
                           f"{', '.join(r.table for r in self.relations.values())})")
        if len(owners) > 1:
            raise _Refused(f"column {name!r} is ambiguous (in {', '.join(owners)}): qualify it "
                           f"as {owners[0]}.{name}")
        return exp.column(name, table=owners[0])

    def _qualified(self, node: exp.Expression) -> exp.Expression:
        """A copy of ``node`` with every column qualified."""
        from sqlglot import exp

        def qualify(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
                return self._resolve(n)
            return n

        return node.copy().transform(qualify)

    @staticmethod
    def _flat(node: exp.Expression) -> exp.Expression:
        """A copy of qualified ``node`` over the joined rows' flat names."""
        from sqlglot import exp

        def flatten(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Column) and n.table:
                return exp.column(flat_name(n.table, n.name))
            return n

        return node.copy().transform(flatten)

    @staticmethod
    def _unqualified(node: exp.Expression) -> exp.Expression:
        """A copy of qualified ``node`` over its one relation's own column names."""
        from sqlglot import exp

        def strip(n: exp.Expression) -> exp.Expression:
            return exp.column(n.name) if isinstance(n, exp.Column) and n.table else n

        return node.copy().transform(strip)

    # -- SELECT ------------------------------------------------------------------------------

    def _outputs(self) -> list[tuple[str, exp.Expression]]:
        """(name, qualified expression) of every output column, stars expanded."""
        from sqlglot import exp

        out: list[tuple[str, exp.Expression]] = []
        for item in self.select.expressions:
            if isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                              and isinstance(item.this, exp.Star)):
                out.extend(self._star(item))
                continue
            if isinstance(item, exp.Alias):
                name, node = item.alias, item.this
            elif isinstance(item, exp.Column):
                name, node = item.name.lower(), item
            else:
                raise _Refused(f"name the output {_text(item, 60)!r} with AS")
            if not is_identifier(name):
                raise _Refused(f"output name {name!r} must be an identifier")
            out.append((name, self._qualified(node)))
        seen: set[str] = set()
        for name, _ in out:
            if name.lower() in seen:
                raise _Refused(f"output column {name!r} appears twice: name them apart with AS "
                               "(list the columns instead of *)")
            seen.add(name.lower())
        for _, node in out:
            self._aggregates(node)  # refuses unsupported and nested aggregates
        return out

    def _star(self, item: exp.Expression) -> Iterator[tuple[str, exp.Expression]]:
        from sqlglot import exp

        if isinstance(item, exp.Column) and item.table:
            alias = item.table.lower()
            if alias not in self.relations:
                raise _Refused(f"unknown relation {alias!r} in {alias}.*; the query's "
                               f"relations: {', '.join(self.relations)}")
            aliases = [alias]
        else:
            aliases = list(self.relations)
        for alias in aliases:
            for column in self.relations[alias].columns.tuple_columns:
                yield column, exp.column(column, table=alias)

    def _aggregates(self, node: exp.Expression) -> list[exp.Expression]:
        """The aggregate calls in ``node``; refuses unsupported and nested ones."""
        from sqlglot import exp

        found = list(node.find_all(exp.AggFunc))
        for agg in found:
            if agg.sql_name() not in AGGREGATES:
                raise _Refused(f"aggregate {agg.sql_name()} is not supported (supported: "
                               f"{', '.join(AGGREGATES)})")
            if any(inner is not agg for inner in agg.find_all(exp.AggFunc)):
                raise _Refused(f"nested aggregates are not supported ({_text(agg, 60)!r})")
        return found

    # -- WHERE and ON ------------------------------------------------------------------------

    @staticmethod
    def _conjuncts(node: exp.Expression | None) -> Iterator[exp.Expression]:
        """The conditions ANDed in ``node`` (a WHERE, or an ON condition)."""
        from sqlglot import exp

        if node is None:
            return
        if isinstance(node, exp.Where):
            node = node.this
        node = node.unnest()
        if isinstance(node, exp.And):
            for part in node.flatten():
                yield from _Parser._conjuncts(part)
        else:
            yield node

    def _classify(self, cond: exp.Expression) -> tuple[str, object]:
        """``("join", JoinPredicate)`` or ``("filter", (alias, sql))`` of a qualified
        condition; refuses the others."""
        from sqlglot import exp

        if self._aggregates(cond):
            raise _Refused(f"condition {_text(cond)!r} aggregates (HAVING is not supported)")
        aliases = sorted({c.table for c in cond.find_all(exp.Column)})
        if not aliases:
            raise _Refused(f"condition {_text(cond)!r} names no column")
        if len(aliases) == 1:
            return "filter", (aliases[0], self._unqualified(cond).sql(dialect=DIALECT))
        both = ", ".join(aliases)
        if isinstance(cond, exp.EQ):
            left, right = cond.this.unnest(), cond.expression.unnest()
            if isinstance(left, exp.Column) and isinstance(right, exp.Column):
                sides = sorted((f"{left.table}.{left.name}", f"{right.table}.{right.name}"))
                return "join", JoinPredicate(*sides)
            raise _Refused(f"join condition {_text(cond)!r} must equate two columns of two "
                           "relations (expressions in joins are not supported)")
        if any(True for _ in cond.find_all(exp.Or)):
            raise _Refused(f"condition {_text(cond)!r} combines relations {both} with OR "
                           "(only AND of equality joins and one-relation filters is supported)")
        raise _Refused(f"condition {_text(cond)!r} across relations {both} is not an equality "
                       "of two columns (non-equality joins are not supported)")

    # -- GROUP BY ----------------------------------------------------------------------------

    def _group_by(self, outputs: list[tuple[str, exp.Expression]]) -> list[exp.Expression]:
        """The grouping expressions, qualified (``GROUP BY 1`` and output names resolved)."""
        from sqlglot import exp

        group = self.select.args.get("group")
        if group is None:
            return []
        if any(group.args.get(k) for k in ("grouping_sets", "cube", "rollup")):
            raise _Refused("GROUPING SETS, CUBE and ROLLUP are not supported")
        by_name = {name.lower(): node for name, node in outputs}
        out: list[exp.Expression] = []
        for item in group.expressions:
            if isinstance(item, exp.Literal) and not item.is_string:
                position = int(item.name) if item.name.isdigit() else 0
                if not 1 <= position <= len(outputs):
                    raise _Refused(f"GROUP BY {item.name}: there are {len(outputs)} outputs")
                node = outputs[position - 1][1]
            elif (isinstance(item, exp.Column) and not item.table
                  and not any(item.name.lower() in r.columns.columns
                              for r in self.relations.values())
                  and item.name.lower() in by_name):
                node = by_name[item.name.lower()]  # GROUP BY an output's name
            else:
                node = self._qualified(item)
            if self._aggregates(node):
                raise _Refused(f"GROUP BY {_text(item, 60)!r} aggregates")
            if node.sql() not in {g.sql() for g in out}:
                out.append(node)
        return out

    @staticmethod
    def _check_grouping(outputs: list[tuple[str, exp.Expression]],
                        group: list[exp.Expression]) -> None:
        """Every output column outside an aggregate is grouped by."""
        from sqlglot import exp

        grouped = {g.sql() for g in group}
        columns = {(g.table, g.name) for g in group if isinstance(g, exp.Column)}
        for name, node in outputs:
            if node.sql() in grouped:
                continue
            for col in node.find_all(exp.Column):
                if col.find_ancestor(exp.AggFunc) is None and (col.table, col.name) not in columns:
                    raise _Refused(f"output {name!r} uses {col.table}.{col.name}, which is "
                                   "neither aggregated nor in GROUP BY")
