"""A parsed query → its incremental plan ``a ∘ h``, or the reason it is recomputed instead.

``h`` maps one joined row to a key and monoid values: for an aggregating query the key is the
GROUP BY values (``()`` without GROUP BY) and the values one component per aggregate call
(:mod:`.monoids`); for a plain projection the key is the output row itself and its count the
row's multiplicity (DISTINCT: the row is there while its count is above 0). The join lineage
is not folded into the key: the state keeps each join input's rows keyed by its join columns
(:mod:`.state`), which the join of a batch's changes needs anyway (:mod:`.join`).

What is incremental: one to :data:`MAX_RELATIONS` relations joined by equalities into one
connected graph (inner joins; the parser admits no other), filters on one relation, GROUP BY
with COUNT(*), COUNT, SUM, AVG, MIN, MAX (DISTINCT too), DISTINCT, plain projections, and the
expressions of :mod:`.expr` around them. What is not, each with its reason: more relations, a
cross product (the parser refuses it already; checked again), DISTINCT over an aggregating
query, an aggregate over more than one argument, and any expression :mod:`.expr` does not
evaluate.

>>> from aspen.queries.sql import parse_query
>>> plan = compile_query(parse_query("q", "SELECT a.src, COUNT(*) AS n, AVG(b.cost) AS c "
...     "FROM link a JOIN link b ON a.dst = b.src WHERE a.cost > 1 GROUP BY a.src"))
>>> [r.alias for r in plan.relations], [a.kind for a in plan.aggregates], plan.keep_rows
(['a', 'b'], ['count_star', 'avg'], True)
>>> compile_query(parse_query("q", "SELECT DISTINCT COUNT(*) AS n FROM link GROUP BY src")).reason
'DISTINCT over an aggregating query is recomputed'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from aspen.queries.incremental.expr import (
    Getter,
    NotIncrementalError,
    compile_node,
    compile_sql,
    parse,
)
from aspen.queries.incremental.monoids import BAG, COUNT, SUM
from aspen.queries.names import split_flat_name
from aspen.queries.spec import DIALECT, ParsedQuery

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["MAX_RELATIONS", "Aggregate", "IncrementalPlan", "NotIncremental", "NotIncrementalError",
           "RelationPlan", "Step", "compile_query"]

#: The most relations an incremental plan joins (the joins of more are recomputed).
MAX_RELATIONS = 3


@dataclass(frozen=True)
class NotIncremental:
    """Why a query is recomputed rather than maintained incrementally."""

    reason: str


@dataclass(frozen=True)
class RelationPlan:
    """One relation: its alias and table, the columns the state keeps of its rows (the join,
    output and grouping columns) and the filter-and-project of a table row (None: filtered
    out)."""

    alias: str
    table: str
    columns: tuple[str, ...]
    admit: Callable[[Mapping[str, Any]], tuple | None]
    #: Its filters' SQL, as the optimizer names them ``alias: sql``.
    filters: tuple[str, ...] = ()


@dataclass(frozen=True)
class Step:
    """One extension of a partly joined row by relation ``position``: the probe computes the
    values of that relation's ``columns`` from the relations already bound."""

    position: int
    columns: tuple[int, ...]
    probe: Callable[[list], tuple]


@dataclass(frozen=True)
class Aggregate:
    """One aggregate call: its kind (``count_star``, ``count``, ``sum``, ``avg``, ``min``,
    ``max``), whether DISTINCT, its argument over a joined row, and its monoid."""

    kind: str
    distinct: bool
    arg: Getter | None
    sql: str

    @property
    def monoid(self) -> Any:
        """The monoid of the state component."""
        if self.distinct or self.kind in ("min", "max"):
            return BAG
        return SUM if self.kind in ("sum", "avg") else COUNT

    def lift(self, joined: list, sign: int) -> Any:
        """The component of one joined row with multiplicity ``sign``."""
        if self.kind == "count_star":
            return sign
        return self.monoid.lift(self.arg(joined) if self.arg else None, sign)

    def final(self, component: Any) -> Any:
        """The aggregate's value from its merged component."""
        if self.kind == "count_star":
            return component
        return self.monoid.final(component, "count" if self.kind == "count" else self.kind)


@dataclass(frozen=True)
class IncrementalPlan:
    """``h`` and ``a`` of one query (see the module docstring)."""

    name: str
    relations: tuple[RelationPlan, ...]
    steps: tuple[tuple[Step, ...], ...]
    aggregated: bool
    distinct: bool
    group_key: Callable[[list], tuple]
    aggregates: tuple[Aggregate, ...]
    output_names: tuple[str, ...]
    output_row: Callable[[tuple, list], tuple]
    global_aggregate: bool = False
    #: The join graph as ``(relation, column, relation, column)`` links, both ways round.
    edges: tuple[tuple[int, int, int, int], ...] = ()
    #: Per relation, the order the others are bound in after a change of it (the steps').
    orders: tuple[tuple[int, ...], ...] = ()
    #: The join predicates: (the optimizer's id, relation, column, relation, column).
    predicates: tuple[tuple[str, int, int, int, int], ...] = ()

    @property
    def keep_rows(self) -> bool:
        """Whether the state keeps the relations' rows (a join needs them)."""
        return len(self.relations) > 1

    @property
    def tables(self) -> tuple[str, ...]:
        """The distinct tables read, sorted."""
        return tuple(sorted({r.table for r in self.relations}))

    def ordered(self, orders: Sequence[Sequence[int]]) -> IncrementalPlan:
        """This plan with its relations' changes joined in ``orders`` (per relation, the
        others in the order they are bound; each must join one already bound), e.g. the
        orders of the optimizer's plan (:mod:`.order`). The state does not depend on them.

        >>> from aspen.queries.sql import parse_query
        >>> plan = compile_query(parse_query("q", "SELECT a.src FROM link a JOIN link b "
        ...     "ON a.dst = b.src JOIN link c ON b.dst = c.src"))
        >>> plan.orders
        ((1, 2), (0, 2), (1, 0))
        >>> plan.ordered([(1, 2), (2, 0), (1, 0)]).orders[1]
        (2, 0)
        """
        orders = tuple(tuple(int(p) for p in order) for order in orders)
        if orders == self.orders:
            return self
        steps = _steps_in(self.edges, self.relations, orders)
        return replace(self, steps=steps, orders=orders)

    def index_columns(self) -> dict[int, set[tuple[int, ...]]]:
        """Per relation position, the column sets the joins look its rows up by."""
        out: dict[int, set[tuple[int, ...]]] = {}
        for steps in self.steps:
            for step in steps:
                out.setdefault(step.position, set()).add(step.columns)
        return out


def compile_query(parsed: ParsedQuery) -> IncrementalPlan | NotIncremental:
    """The incremental plan of ``parsed``, or why there is none (see the module docstring)."""
    try:
        return _compile(parsed)
    except NotIncrementalError as err:
        return NotIncremental(str(err))


def _compile(parsed: ParsedQuery) -> IncrementalPlan:
    spec = parsed.spec
    if len(spec.relations) > MAX_RELATIONS:
        raise NotIncrementalError(f"the query joins {len(spec.relations)} relations "
                                  f"(incremental up to {MAX_RELATIONS})")
    if spec.aggregated and spec.distinct:
        raise NotIncrementalError("DISTINCT over an aggregating query is recomputed")
    positions = {rel.alias: i for i, rel in enumerate(spec.relations)}
    relations = tuple(_relation(rel.alias, rel.table, rel.columns, rel.filters)
                      for rel in spec.relations)

    def joined_column(name: str) -> Getter:
        split = split_flat_name(name)
        if split is None or split[0] not in positions:
            raise NotIncrementalError(f"column {name!r} is not a relation's column")
        p = positions[split[0]]
        c = relations[p].columns.index(split[1])
        return lambda joined: joined[p][c]

    predicates = _predicates(parsed, relations, positions)
    edges = _edges(predicates)
    orders = _greedy_orders(edges, relations)
    steps = _steps_in(edges, relations, orders)
    if not spec.aggregated:
        outputs = [compile_sql(o.sql, joined_column) for o in spec.outputs]
        return IncrementalPlan(
            parsed.name, relations, steps, False, spec.distinct,
            lambda joined: tuple(f(joined) for f in outputs), (),
            tuple(o.name for o in spec.outputs), lambda key, _finals: key,
            edges=edges, orders=orders, predicates=predicates)

    groups = [parse(g) for g in spec.group_by]
    group_sql = [_sql(g) for g in groups]
    group_getters = [compile_node(g, joined_column) for g in groups]
    aggregates: list[Aggregate] = []
    found: dict[str, int] = {}

    def aggregate_hook(node: exp.Expression) -> Getter | None:
        from sqlglot import exp

        if isinstance(node, exp.AggFunc):
            text = _sql(node)
            if text not in found:
                found[text] = len(aggregates)
                aggregates.append(_aggregate(node, joined_column))
            k = found[text]
            return lambda row: row[1][k]
        text = _sql(node)
        if text in group_sql:
            g = group_sql.index(text)
            return lambda row: row[0][g]
        return None

    def group_column(name: str) -> Getter:
        raise NotIncrementalError(f"output column {name!r} is neither grouped nor aggregated")

    outputs = [compile_node(parse(o.sql), group_column, aggregate_hook) for o in spec.outputs]
    return IncrementalPlan(
        parsed.name, relations, steps, True, False,
        lambda joined: tuple(g(joined) for g in group_getters), tuple(aggregates),
        tuple(o.name for o in spec.outputs),
        lambda key, finals: tuple(f((key, finals)) for f in outputs),
        global_aggregate=not spec.group_by, edges=edges, orders=orders, predicates=predicates)


def _sql(node: exp.Expression) -> str:
    return node.sql(dialect=DIALECT)


def _relation(alias: str, table: str, columns: tuple[str, ...],
              filters: tuple[str, ...]) -> RelationPlan:
    checks = [compile_sql(f, lambda name: lambda row, n=name: row.get(n)) for f in filters]

    def admit(row: Mapping[str, Any]) -> tuple | None:
        for check in checks:
            if check(row) is not True:
                return None
        return tuple(row.get(c) for c in columns)

    return RelationPlan(alias, table, columns, admit, tuple(filters))


def _aggregate(node: exp.AggFunc, joined_column: Callable[[str], Getter]) -> Aggregate:
    from sqlglot import exp

    kinds = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
    kind = next((k for cls, k in kinds.items() if type(node) is cls), None)
    if kind is None:
        raise NotIncrementalError(f"aggregate {node.sql_name()} is not maintained incrementally")
    arg_node = node.this
    distinct = isinstance(arg_node, exp.Distinct)
    if distinct:
        if len(arg_node.expressions) != 1:
            raise NotIncrementalError(f"{kind.upper()}(DISTINCT …) of several values is "
                                      "recomputed")
        arg_node = arg_node.expressions[0]
    if node.expressions:
        raise NotIncrementalError(f"{kind.upper()} of several arguments is recomputed")
    if kind == "count" and isinstance(arg_node, exp.Star):
        return Aggregate("count_star", False, None, _sql(node))
    return Aggregate(kind, distinct, compile_node(arg_node, joined_column), _sql(node))


#: One link of the join graph: (relation, its column, other relation, its column).
Edge = tuple[int, int, int, int]


def _edges(predicates: Sequence[tuple[str, int, int, int, int]]) -> tuple[Edge, ...]:
    """The join predicates as links between relation positions, both ways round."""
    edges: list[Edge] = []
    for _, lp, lc, rp, rc in predicates:
        edges += [(lp, lc, rp, rc), (rp, rc, lp, lc)]
    return tuple(edges)


def _predicates(parsed: ParsedQuery, relations: tuple[RelationPlan, ...],
                positions: Mapping[str, int]) -> tuple[tuple[str, int, int, int, int], ...]:
    """The join predicates: the optimizer's id, then each side's relation and column index."""
    out = []
    for pred in parsed.query.joins:
        (la, lc), (ra, rc) = (side.split(".", 1) for side in (pred.left, pred.right))
        lp, rp = positions[la], positions[ra]
        out.append((pred.id, lp, relations[lp].columns.index(lc), rp,
                    relations[rp].columns.index(rc)))
    return tuple(out)


def _links(edges: Sequence[Edge], bound: set[int]) -> dict[int, list[tuple[int, int, int]]]:
    """Per relation not bound, its links to the bound ones: (its column, relation, column)."""
    links: dict[int, list[tuple[int, int, int]]] = {}
    for target, tcol, source, scol in edges:
        if target not in bound and source in bound:
            links.setdefault(target, []).append((tcol, source, scol))
    return links


def _not_joined(relations: tuple[RelationPlan, ...]) -> NotIncrementalError:
    names = ", ".join(sorted(r.alias for r in relations))
    return NotIncrementalError(f"relations {names} are not joined by an equality "
                               "(a cross product is recomputed)")


def _greedy_orders(edges: Sequence[Edge], relations: tuple[RelationPlan, ...]
                   ) -> tuple[tuple[int, ...], ...]:
    """Per relation, the others in the order a changed row of it is joined with them before
    any plan is known: each next relation is one joined to those bound (the most join columns
    first)."""
    out = []
    for start in range(len(relations)):
        bound, order = {start}, []
        while len(bound) < len(relations):
            links = _links(edges, bound)
            if not links:
                raise _not_joined(relations)
            target = max(links, key=lambda t: (len(links[t]), -t))
            order.append(target)
            bound.add(target)
        out.append(tuple(order))
    return tuple(out)


def _steps_in(edges: Sequence[Edge], relations: tuple[RelationPlan, ...],
              orders: Sequence[Sequence[int]]) -> tuple[tuple[Step, ...], ...]:
    """The steps of ``orders``: each next relation is looked up by every join column it
    shares with the relations bound (NotIncrementalError: an order that is not a permutation
    of the others, or binds a relation joined to none bound)."""
    if len(orders) != len(relations):
        raise NotIncrementalError(f"{len(orders)} join orders for {len(relations)} relations")
    out = []
    for start, order in enumerate(orders):
        if sorted((start, *order)) != list(range(len(relations))):
            raise NotIncrementalError(f"join order {order} of relation {start} does not bind "
                                      "every other relation once")
        bound, steps = {start}, []
        for target in order:
            links = _links(edges, bound).get(target)
            if not links:
                raise NotIncrementalError(f"join order {order} of relation {start} binds "
                                          f"relation {target} before one it is joined to")
            pairs = sorted(set(links))
            steps.append(Step(target, tuple(t for t, _, _ in pairs), _probe(pairs)))
            bound.add(target)
        out.append(tuple(steps))
    return tuple(out)


def _probe(pairs: list[tuple[int, int, int]]) -> Callable[[list], tuple]:
    sources = [(s, c) for _, s, c in pairs]
    return lambda joined: tuple(joined[s][c] for s, c in sources)
