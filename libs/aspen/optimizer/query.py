"""The query an optimizer plans: relations under aliases, equality join predicates, filters.

A :class:`Query` is a join graph. Its relations are named by alias (``c`` for ``customer``);
an equality join predicate links two columns of two relations; a filter restricts one relation
(its selectivity comes from the statistics). Columns linked by equality predicates form *key
classes*: a sort-merge join on one class leaves its output partitioned and sorted by it, which
a later sort-merge on the same class reuses (:mod:`aspen.optimizer.space`).

Q.json, the file form (``aspen optimize --query``; docs/optimizer.md):

>>> q = Query.from_json({
...     "relations": {"c": "customer", "o": "orders", "l": "lineitem"},
...     "joins": ["c.c_custkey = o.o_custkey", "o.o_orderkey = l.l_orderkey"],
...     "filters": [{"relation": "c", "predicate": "c_mktsegment = 'MACHINERY'"}]})
>>> q.aliases
('c', 'l', 'o')
>>> [p.id for p in q.joins]
['c.c_custkey=o.o_custkey', 'l.l_orderkey=o.o_orderkey']
>>> q.connected(frozenset({"c", "l"}))
False
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations
from typing import Any

from aspen.errors import ConfigError

__all__ = ["Filter", "JoinPredicate", "Query"]

Expr = frozenset[str]


@dataclass(frozen=True, order=True)
class JoinPredicate:
    """``left = right`` between columns ``alias.column`` of two relations (kept in sorted order)."""

    left: str
    right: str

    @staticmethod
    def parse(text: str) -> JoinPredicate:
        """``"c.c_custkey = o.o_custkey"`` → the predicate (sides sorted).

        >>> JoinPredicate.parse("o.o_custkey=c.c_custkey")
        JoinPredicate(left='c.c_custkey', right='o.o_custkey')
        """
        parts = [p.strip() for p in text.split("=")]
        if len(parts) != 2 or not all(all(p.partition(".")) for p in parts):
            raise ConfigError(f"join predicate {text!r}: expected 'alias.column = alias.column'")
        left, right = sorted(parts)
        if left.split(".", 1)[0] == right.split(".", 1)[0]:
            raise ConfigError(f"join predicate {text!r} joins a relation with itself")
        return JoinPredicate(left, right)

    @property
    def id(self) -> str:
        """The predicate's name in statistics and changes: ``left=right``."""
        return f"{self.left}={self.right}"

    @property
    def aliases(self) -> Expr:
        """The two relations the predicate joins."""
        return frozenset({self.left.split(".", 1)[0], self.right.split(".", 1)[0]})


@dataclass(frozen=True)
class Filter:
    """A predicate on one relation, e.g. ``o_orderdate < '1995-03-15'`` on ``o``."""

    relation: str
    predicate: str

    @property
    def id(self) -> str:
        """The filter's name in statistics and changes: ``alias: predicate``."""
        return f"{self.relation}: {self.predicate}"


class _Signature:
    """A tuple with its hash kept: equal iff the tuples are equal."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: tuple) -> None:
        self.value, self._hash = value, hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, _Signature) and self.value == other.value)


def _kind(value: Any) -> str:
    """A JSON value's type in words."""
    return {"str": "a string", "bool": "a boolean", "NoneType": "null", "list": "a list",
            "dict": "an object", "int": "a number", "float": "a number"}.get(
                type(value).__name__, type(value).__name__)


def _typed(value: Any, kind: type, what: str, expected: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, str | bool):
        raise ConfigError(f"query: {what} must be {expected}, not {_kind(value)}")
    return value


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"query: {what} must be a non-empty string, not {value!r}")
    return value


@dataclass(frozen=True)
class Query:
    """A join graph: ``relations`` (alias → table), equality ``joins`` and per-relation
    ``filters``. Every relation must be reachable from every other through joins (plans have no
    cross products)."""

    relations: Mapping[str, str]
    joins: tuple[JoinPredicate, ...]
    filters: tuple[Filter, ...] = ()
    name: str = "query"
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.relations:
            raise ConfigError("a query needs at least one relation")
        for pred in self.joins:
            unknown = pred.aliases - set(self.relations)
            if unknown:
                raise ConfigError(f"join {pred.id} names unknown relation(s) {sorted(unknown)}")
        for flt in self.filters:
            if flt.relation not in self.relations:
                raise ConfigError(f"filter {flt.id!r} names unknown relation {flt.relation!r}")
        if not self.connected(self.root):
            raise ConfigError(f"query {self.name!r}: its join graph is not connected "
                              "(plans without cross products need one)")

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Query:
        """Read Q.json: ``relations`` maps alias → table name (or ``{"table": name}``), ``joins``
        lists ``"a.x = b.y"`` strings, ``filters`` lists ``{"relation", "predicate"}``; every
        part has exactly its type (ConfigError, one line).

        >>> Query.from_json({"relations": ["a", "b"]})
        Traceback (most recent call last):
        ...
        aspen.errors.ConfigError: query: relations must be an object (alias → table), not a list
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"query: Q.json must be an object, not {_kind(data)}")
        if "relations" not in data:
            raise ConfigError("query: Q.json needs 'relations' (alias → table)")
        relations = {}
        for alias, table in _typed(data["relations"], Mapping, "relations",
                                   "an object (alias → table)").items():
            if not isinstance(alias, str) or not alias or any(c in alias for c in ".= \t\n"):
                raise ConfigError(f"query: alias {alias!r} must be a non-empty name without "
                                  "'.', '=' or spaces")
            if isinstance(table, Mapping):
                if "table" not in table:
                    raise ConfigError(f"query: relation {alias!r} needs 'table'")
                table = table["table"]
            relations[alias] = _name(table, f"the table of {alias!r}")
        joins = tuple(sorted({JoinPredicate.parse(_name(j, "a join"))
                              for j in _typed(data.get("joins", []), list, "joins",
                                              "a list of 'a.x = b.y' strings")}))
        filters = []
        for f in _typed(data.get("filters", []), list, "filters", "a list of objects"):
            f = _typed(f, Mapping, "a filter", "an object with 'relation' and 'predicate'")
            if "relation" not in f or "predicate" not in f:
                raise ConfigError(f"query: filter {dict(f)!r} needs 'relation' and 'predicate'")
            filters.append(Filter(_name(f["relation"], "a filter's relation"),
                                  _name(f["predicate"], "a filter's predicate")))
        return Query(relations, joins, tuple(filters),
                     name=_name(data.get("name", "query"), "name"),
                     extra={k: v for k, v in data.items()
                            if k not in {"relations", "joins", "filters", "name"}})

    def to_json(self) -> dict[str, Any]:
        """The Q.json form of this query."""
        return {"name": self.name, "relations": dict(self.relations),
                "joins": [p.id.replace("=", " = ") for p in self.joins],
                "filters": [{"relation": f.relation, "predicate": f.predicate}
                            for f in self.filters], **self.extra}

    @cached_property
    def signature(self) -> _Signature:
        """A hashable identity of the join graph (relations, joins, filters), its hash computed
        once: the cost model memoizes cardinalities by it."""
        return _Signature((tuple(sorted(self.relations.items())), self.joins, self.filters))

    @cached_property
    def aliases(self) -> tuple[str, ...]:
        """The relations' aliases, sorted."""
        return tuple(sorted(self.relations))

    @property
    def root(self) -> Expr:
        """The whole query as an expression: every alias."""
        return frozenset(self.relations)

    def splits(self, expr: Expr, left_linear: bool = False) -> Iterator[tuple[Expr, Expr]]:
        """Ordered ``(left, right)`` halves of ``expr``, each connected, with a join predicate
        between them (no cross products); ``left_linear``: the right half one relation.

        >>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
        >>> [(sorted(l), sorted(r)) for l, r in q.splits(q.root)]
        [(['a'], ['b']), (['b'], ['a'])]
        """
        members = sorted(expr)
        for size in range(1, len(members)):
            for chosen in combinations(members, size):
                left = frozenset(chosen)
                right = expr - left
                if left_linear and len(right) != 1:
                    continue
                if (self.connected(left) and self.connected(right)
                        and self.joins_between(left, right)):
                    yield left, right

    def joins_within(self, expr: Iterable[str]) -> tuple[JoinPredicate, ...]:
        """The join predicates whose two relations are both in ``expr``."""
        inside = set(expr)
        return tuple(p for p in self.joins if p.aliases <= inside)

    def joins_between(self, left: Expr, right: Expr) -> tuple[JoinPredicate, ...]:
        """The join predicates with one relation in ``left`` and the other in ``right``."""
        return tuple(p for p in self.joins
                     if len(p.aliases & left) == 1 and len(p.aliases & right) == 1)

    def filters_of(self, alias: str) -> tuple[Filter, ...]:
        """The filters on one relation."""
        return tuple(f for f in self.filters if f.relation == alias)

    def connected(self, expr: Expr) -> bool:
        """Whether the relations of ``expr`` are connected by joins among themselves."""
        if not expr:
            return False
        todo, seen = [next(iter(sorted(expr)))], set()
        while todo:
            alias = todo.pop()
            if alias in seen:
                continue
            seen.add(alias)
            for pred in self.joins:
                if alias in pred.aliases and pred.aliases <= expr:
                    todo.extend(pred.aliases - seen)
        return seen == set(expr)

    @cached_property
    def key_classes(self) -> tuple[frozenset[str], ...]:
        """Columns linked by equality join predicates, as classes (union-find), sorted.

        >>> q = Query.from_json({"relations": {"a": "t", "b": "u", "c": "v"},
        ...                      "joins": ["a.k = b.k", "b.k = c.k"]})
        >>> [sorted(k) for k in q.key_classes]
        [['a.k', 'b.k', 'c.k']]
        """
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for pred in self.joins:
            parent[find(pred.left)] = find(pred.right)
        classes: dict[str, set[str]] = {}
        for column in parent:
            classes.setdefault(find(column), set()).add(column)
        return tuple(sorted((frozenset(c) for c in classes.values()), key=sorted))

    def key_name(self, key: frozenset[str]) -> str:
        """A key class's name: its smallest column."""
        return min(key)

    def keys_between(self, left: Expr, right: Expr) -> tuple[frozenset[str], ...]:
        """The key classes some predicate between ``left`` and ``right`` belongs to."""
        columns = {c for p in self.joins_between(left, right) for c in (p.left, p.right)}
        return tuple(k for k in self.key_classes if k & columns)
