"""The cost model: output sizes of sub-expressions and the local cost of each physical operator.

Every optimizer in this package (declarative, Volcano, System-R, the incremental ones) costs
plans with these functions only, so they differ in search and pruning, never in costs. A plan's
cost is the sum of its operators' local costs (one scalar, in abstract units); so the best plan
of a sub-expression is part of the best plan of any expression that contains it (the principle
of optimality the optimizers rely on).

Sizes. ``card(S)`` of a set of relations is the product of each relation's rows times the
selectivity of its filters, times the selectivity of every join predicate inside ``S``;
``bytes(S) = card(S) · width(S)``, the width being the sum of the relations' row widths.

Local costs (``p`` = :data:`DEFAULT_PARAMS`, overridable per statistic ``params``):

=================  ===================================================================
``scan`` of a      ``rows·width·scan_byte + rows·cpu_row`` (filters applied while scanning)
``sort`` of S      ``bytes(S)·net_byte + card(S)·log2(card(S)+2)·sort_row``: the exchange on the
                   join key and the sort a sort-merge join needs of an input not yet sorted on it
``broadcast_hash`` ``bytes(R)·net_byte·executors·penalty + card(R)·hash_build_row +
                   card(L)·cpu_row + card(S)·cpu_row``, R the broadcast (build) side, the right
                   child; ``penalty`` is ``broadcast_penalty`` when bytes(R) exceed
                   ``broadcast_limit``, else 1
``shuffle_hash``   ``(bytes(L)+bytes(R))·net_byte + card(R)·hash_build_row + card(L)·cpu_row
                   + card(S)·cpu_row``, R the build side
``sort_merge``     ``(card(L)+card(R))·cpu_row + card(S)·cpu_row`` over inputs sorted on the key;
                   its output is sorted on that key, so a sort-merge on the same key above
                   needs no sort of it
=================  ===================================================================

A plan is a JSON tree: ``{"scan": alias}`` or ``{"join": method, "left": PLAN, "right": PLAN}``
(``"key"`` optional on ``sort_merge``: the key class, e.g. ``"c.c_custkey=o.o_custkey"``;
without it, the cheapest key). :func:`cost_of` costs any bushy plan without cross products.

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> s = Stats.from_json({"tables": {"t": {"rows": 1000}, "u": {"rows": 10}}})
>>> card(q, s, frozenset({"a", "b"}))
10.0
>>> small_right = {"join": "broadcast_hash", "left": {"scan": "a"}, "right": {"scan": "b"}}
>>> small_left = {"join": "broadcast_hash", "left": {"scan": "b"}, "right": {"scan": "a"}}
>>> cost_of(small_right, q, s) < cost_of(small_left, q, s)
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from aspen.errors import ConfigError
from aspen.optimizer.query import Expr, JoinPredicate, Query
from aspen.optimizer.stats import DEFAULT_FILTER_SELECTIVITY, StatKey, Stats

__all__ = [
    "DEFAULT_PARAMS",
    "JOIN_METHODS",
    "card",
    "cost_of",
    "depends_on",
    "join_cost",
    "key_label",
    "scan_cost",
    "sort_cost",
]

#: The physical join methods, as Spark runs them (broadcast-hash, shuffle-hash, sort-merge).
JOIN_METHODS: tuple[str, ...] = ("broadcast_hash", "shuffle_hash", "sort_merge")

#: The cost model's parameters and their defaults (a statistic ``params`` overrides one).
DEFAULT_PARAMS: dict[str, float] = {
    "scan_byte": 1e-9,
    "cpu_row": 1e-7,
    "net_byte": 4e-9,
    "hash_build_row": 3e-7,
    "sort_row": 2e-7,
    "executors": 8.0,
    "broadcast_limit": 1e8,
    "broadcast_penalty": 10.0,
}


def _param(stats: Stats, name: str) -> float:
    return stats.param(name, DEFAULT_PARAMS[name])


def join_selectivity(query: Query, stats: Stats, pred: JoinPredicate) -> float:
    """A join predicate's selectivity: the statistic, else ``1 / max(ndv)`` of its columns."""
    given = stats.selectivity(pred.id)
    if given is not None:
        return given
    ndvs = []
    for column in (pred.left, pred.right):
        alias, name = column.split(".", 1)
        ndvs.append(stats.ndv(query.relations[alias], name))
    return 1.0 / max(1.0, *ndvs)


def filter_selectivity(query: Query, stats: Stats, alias: str) -> float:
    """The product of the selectivities of one relation's filters."""
    out = 1.0
    for flt in query.filters_of(alias):
        given = stats.selectivity(flt.id)
        out *= DEFAULT_FILTER_SELECTIVITY if given is None else given
    return out


def card(query: Query, stats: Stats, expr: Iterable[str]) -> float:
    """Estimated output rows of joining the relations of ``expr`` (with their filters);
    memoized per statistics object, since every AND node of an expression asks again."""
    expr = frozenset(expr)
    key = ("card", query.signature, expr)
    cached = stats.memo.get(key)
    if cached is not None:
        return cached
    out = 1.0
    for alias in expr:
        out *= stats.rows(query.relations[alias]) * filter_selectivity(query, stats, alias)
    for pred in query.joins_within(expr):
        out *= join_selectivity(query, stats, pred)
    stats.memo[key] = out
    return out


def width(query: Query, stats: Stats, expr: Iterable[str]) -> float:
    """Bytes per output row of ``expr``: the sum of its relations' widths."""
    return sum(stats.width(query.relations[a]) for a in expr)


def _bytes(query: Query, stats: Stats, expr: Expr) -> float:
    return card(query, stats, expr) * width(query, stats, expr)


def depends_on(query: Query, expr: Iterable[str]) -> frozenset[StatKey]:
    """The statistics the costs of operators producing ``expr`` read (``params`` aside: every
    cost reads them)."""
    expr = frozenset(expr)
    keys: set[StatKey] = set()
    for alias in expr:
        table = query.relations[alias]
        keys |= {("rows", table), ("width", table)}
        keys |= {("selectivity", f.id) for f in query.filters_of(alias)}
    for pred in query.joins_within(expr):
        keys.add(("selectivity", pred.id))
        for column in (pred.left, pred.right):
            alias, name = column.split(".", 1)
            keys.add(("ndv", f"{query.relations[alias]}.{name}"))
    return frozenset(keys)


def scan_cost(query: Query, stats: Stats, alias: str) -> float:
    """Local cost of scanning one relation (and applying its filters)."""
    table = query.relations[alias]
    rows = stats.rows(table)
    return rows * stats.width(table) * _param(stats, "scan_byte") + rows * _param(stats, "cpu_row")


def sort_cost(query: Query, stats: Stats, expr: Expr) -> float:
    """Local cost of exchanging and sorting ``expr``'s output on a join key."""
    rows = card(query, stats, expr)
    return (_bytes(query, stats, expr) * _param(stats, "net_byte")
            + rows * math.log2(rows + 2) * _param(stats, "sort_row"))


def join_cost(query: Query, stats: Stats, method: str, left: Expr, right: Expr) -> float:
    """Local cost of one join of ``left`` (probe side) with ``right`` (build side)."""
    cpu, net = _param(stats, "cpu_row"), _param(stats, "net_byte")
    n_left, n_right = card(query, stats, left), card(query, stats, right)
    n_out = card(query, stats, left | right)
    if method == "broadcast_hash":
        shipped = _bytes(query, stats, right)
        penalty = _param(stats, "broadcast_penalty") if shipped > _param(
            stats, "broadcast_limit") else 1.0
        return (shipped * net * _param(stats, "executors") * penalty
                + n_right * _param(stats, "hash_build_row") + n_left * cpu + n_out * cpu)
    if method == "shuffle_hash":
        shipped = _bytes(query, stats, left) + _bytes(query, stats, right)
        return (shipped * net + n_right * _param(stats, "hash_build_row")
                + n_left * cpu + n_out * cpu)
    if method == "sort_merge":
        return (n_left + n_right) * cpu + n_out * cpu
    raise ConfigError(f"unknown join method {method!r}; known: {', '.join(JOIN_METHODS)}")


def key_label(key: frozenset[str]) -> str:
    """A key class as text: its columns, sorted, joined by ``=``."""
    return "=".join(sorted(key))


def _key_of(query: Query, label: str) -> frozenset[str]:
    for key in query.key_classes:
        if key_label(key) == label or label in {p.id for p in query.joins if p.left in key}:
            return key
    raise ConfigError(f"plan: {label!r} is not a join key class of the query")


def _cost(plan: Mapping[str, Any], query: Query, stats: Stats
          ) -> tuple[float, Expr, frozenset[str] | None]:
    """(cost, expression, key class the output is sorted on) of a plan tree."""
    if not isinstance(plan, Mapping):
        raise ConfigError(f"plan: expected an object, got {plan!r}")
    if "scan" in plan:
        alias = str(plan["scan"])
        if alias not in query.relations:
            raise ConfigError(f"plan scans {alias!r}, which is not a relation of the query")
        return scan_cost(query, stats, alias), frozenset({alias}), None
    if "join" not in plan or "left" not in plan or "right" not in plan:
        raise ConfigError(f"plan: a node needs 'scan' or 'join', 'left' and 'right': {plan!r}")
    method = str(plan["join"])
    if method not in JOIN_METHODS:
        raise ConfigError(f"plan: unknown join method {method!r}; known: {', '.join(JOIN_METHODS)}")
    left_cost, left, left_key = _cost(plan["left"], query, stats)
    right_cost, right, right_key = _cost(plan["right"], query, stats)
    if left & right:
        raise ConfigError(f"plan joins {sorted(left & right)} with itself")
    keys = query.keys_between(left, right)
    if not keys:
        raise ConfigError(f"plan joins {sorted(left)} and {sorted(right)} without a join "
                          "predicate (a cross product)")
    below = left_cost + right_cost
    if method != "sort_merge":
        return below + join_cost(query, stats, method, left, right), left | right, None
    if "key" in plan:
        keys = (_key_of(query, str(plan["key"])),)
        if keys[0] not in query.keys_between(left, right):
            raise ConfigError(f"plan: key {plan['key']!r} does not join its two inputs")
    local = join_cost(query, stats, method, left, right)
    best: tuple[float, frozenset[str]] | None = None
    for key in keys:
        sorts = ((0.0 if left_key == key else sort_cost(query, stats, left))
                 + (0.0 if right_key == key else sort_cost(query, stats, right)))
        if best is None or below + local + sorts < best[0]:
            best = (below + local + sorts, key)
    assert best is not None
    return best[0], left | right, best[1]


def cost_of(plan: Mapping[str, Any], query: Query, stats: Stats) -> float:
    """The cost of a plan tree under the model above (bushy, no cross products)."""
    total, expr, _ = _cost(plan, query, stats)
    if expr != query.root:
        raise ConfigError(f"plan covers {sorted(expr)}, not every relation of the query")
    return total
