"""The search space as an and-or graph, and the built-in functions every optimizer shares.

An **OR node** is ``(expr, prop)``: a set of relations and the property its output must have —
``None`` (any) or a key class (sorted and partitioned on it, what a sort-merge join needs of its
inputs). An **AND node** is one way to produce an OR node: a ``scan`` of a single relation, a
``sort`` of ``(expr, None)`` (the enforcer of a key property), or a ``join`` of two smaller OR
nodes by a physical method. Asymmetric methods make ``(L, R)`` and ``(R, L)`` different AND
nodes; no AND node joins two sides that no predicate links (no cross products).

These are the seed's external functions (Liu 2016, ch. 4, Fig. 19): :meth:`SearchSpace.is_leaf`
(``Fn_isleaf``), :meth:`SearchSpace.split` (``Fn_split`` with the physical operators and the
properties required of the inputs merged in), :meth:`SearchSpace.local_cost`
(``Fn_scancost`` / ``Fn_nonscancost``), and :meth:`SearchSpace.affected` (which AND nodes'
local costs a change of statistics moves). ``PlanCost(AND) = local + Σ BestCost(children)``;
``BestCost(OR) = min PlanCost`` over its AND nodes.

>>> from aspen.optimizer.query import Query
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> space = SearchSpace(q, SpaceOptions(methods=("shuffle_hash",)))
>>> [(sorted(n.left.expr), sorted(n.right.expr)) for n in space.split(space.root)]
[(['a'], ['b']), (['b'], ['a'])]
>>> space.counts()
(3, 2)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from aspen.errors import ConfigError
from aspen.optimizer import cost as costs
from aspen.optimizer.query import Expr, Query
from aspen.optimizer.stats import StatKey, Stats

__all__ = ["AndNode", "OrNode", "SearchSpace", "SpaceOptions"]

Key = frozenset[str]


@dataclass(frozen=True, order=True)
class OrNode:
    """``(expr, prop)``: the relations and the required output property (None = any)."""

    expr: Expr = field(compare=False)
    prop: Key | None = field(compare=False)
    sort_key: tuple = field(init=False, repr=False)

    def __post_init__(self) -> None:
        prop = () if self.prop is None else tuple(sorted(self.prop))
        object.__setattr__(self, "sort_key", (len(self.expr), tuple(sorted(self.expr)), prop))

    def __hash__(self) -> int:
        return hash((self.expr, self.prop))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OrNode) and (self.expr, self.prop) == (other.expr, other.prop)

    def label(self) -> str:
        """``(a,b)`` or ``(a,b)@key``."""
        text = "(" + ",".join(sorted(self.expr)) + ")"
        return text if self.prop is None else f"{text}@{costs.key_label(self.prop)}"


@dataclass(frozen=True)
class AndNode:
    """One alternative for ``parent``: ``op`` is scan, sort or join; ``method`` the physical
    operator (a join method; ``scan``; ``sort``); ``key`` the key class of a sort-merge join."""

    parent: OrNode
    op: str
    method: str
    left: OrNode | None = None
    right: OrNode | None = None
    key: Key | None = None

    @property
    def children(self) -> tuple[OrNode, ...]:
        """The OR nodes this alternative reads (none for a scan)."""
        return tuple(c for c in (self.left, self.right) if c is not None)

    def label(self) -> str:
        """A readable name, e.g. ``(a,b)=sort_merge[(a),(b)]``."""
        inner = ",".join(c.label() for c in self.children)
        return f"{self.parent.label()}={self.method}[{inner}]"


@dataclass(frozen=True)
class SpaceOptions:
    """Which plans the space holds: ``methods`` (a subset of the join methods), ``left_linear``
    (the right input of every join a single relation), and ``properties`` (key properties and
    sort enforcers; off, a sort-merge join pays for sorting its inputs in its local cost)."""

    methods: tuple[str, ...] = costs.JOIN_METHODS
    left_linear: bool = False
    properties: bool = True

    def __post_init__(self) -> None:
        unknown = set(self.methods) - set(costs.JOIN_METHODS)
        if unknown or not self.methods:
            raise ConfigError(f"unknown join method(s) {sorted(unknown)}; "
                              f"known: {', '.join(costs.JOIN_METHODS)}")


class SearchSpace:
    """The and-or graph of one query: enumeration (memoized) and costing under statistics."""

    def __init__(self, query: Query, options: SpaceOptions | None = None) -> None:
        self.query = query
        self.options = options or SpaceOptions()
        self._splits: dict[OrNode, tuple[AndNode, ...]] = {}

    @property
    def root(self) -> OrNode:
        """The query's OR node: every relation, any property."""
        return OrNode(self.query.root, None)

    def is_leaf(self, node: OrNode) -> bool:
        """``Fn_isleaf``: a single relation with no required property (a scan)."""
        return len(node.expr) == 1 and node.prop is None

    def split(self, node: OrNode) -> tuple[AndNode, ...]:
        """``Fn_split``: every AND node of ``node``, in a fixed order."""
        cached = self._splits.get(node)
        if cached is not None:
            return cached
        out: list[AndNode] = []
        if self.is_leaf(node):
            out.append(AndNode(node, "scan", "scan"))
        else:
            if node.prop is not None:
                out.append(AndNode(node, "sort", "sort", OrNode(node.expr, None)))
            for left, right in self.query.splits(node.expr, self.options.left_linear):
                for method in self.options.methods:
                    if method != "sort_merge":
                        if node.prop is None:
                            out.append(AndNode(node, "join", method, OrNode(left, None),
                                               OrNode(right, None)))
                        continue
                    for key in self.query.keys_between(left, right):
                        if node.prop is not None and node.prop != key:
                            continue
                        prop = key if self.options.properties else None
                        out.append(AndNode(node, "join", method, OrNode(left, prop),
                                           OrNode(right, prop), key))
        self._splits[node] = tuple(out)
        return self._splits[node]

    def or_nodes(self) -> list[OrNode]:
        """Every OR node reachable from the root (enumerated top-down), smallest first."""
        seen: set[OrNode] = set()
        todo = [self.root]
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            for alt in self.split(node):
                todo.extend(c for c in alt.children if c not in seen)
        return sorted(seen)

    def and_nodes(self) -> list[AndNode]:
        """Every AND node reachable from the root."""
        return [alt for node in self.or_nodes() for alt in self.split(node)]

    def counts(self) -> tuple[int, int]:
        """(OR nodes, join AND nodes): the quantities the seed's analysis counts (Liu 2016,
        §5.3) — scans and sort enforcers are not joins."""
        nodes = self.or_nodes()
        joins = sum(1 for n in nodes for alt in self.split(n) if alt.op == "join")
        return len(nodes), joins

    @cached_property
    def parents(self) -> dict[OrNode, tuple[AndNode, ...]]:
        """Reverse edges: each OR node's parent AND nodes."""
        out: dict[OrNode, list[AndNode]] = {n: [] for n in self.or_nodes()}
        for alt in self.and_nodes():
            for child in alt.children:
                out[child].append(alt)
        return {n: tuple(v) for n, v in out.items()}

    def local_cost(self, alt: AndNode, stats: Stats) -> float:
        """``Fn_scancost`` / ``Fn_nonscancost``: the operator's own cost under ``stats``."""
        q = self.query
        if alt.op == "scan":
            return costs.scan_cost(q, stats, next(iter(alt.parent.expr)))
        if alt.op == "sort":
            return costs.sort_cost(q, stats, alt.parent.expr)
        assert alt.left is not None and alt.right is not None
        local = costs.join_cost(q, stats, alt.method, alt.left.expr, alt.right.expr)
        if alt.method == "sort_merge" and not self.options.properties:
            local += (costs.sort_cost(q, stats, alt.left.expr)
                      + costs.sort_cost(q, stats, alt.right.expr))
        return local

    def depends_on(self, alt: AndNode) -> frozenset[StatKey]:
        """The statistics ``alt``'s local cost reads (besides ``params``)."""
        return costs.depends_on(self.query, alt.parent.expr)

    def affected(self, moved: Iterable[StatKey],
                 nodes: Iterable[AndNode] | None = None) -> list[AndNode]:
        """The AND nodes (of ``nodes``, default all) whose local cost may change when the
        statistics ``moved`` change; a ``params`` change affects every node."""
        moved = set(moved)
        candidates = list(self.and_nodes() if nodes is None else nodes)
        if any(kind == "params" for kind, _ in moved):
            return candidates
        return [alt for alt in candidates if moved & self.depends_on(alt)]

    def plan_json(self, alt: AndNode, best: dict[OrNode, AndNode]) -> dict:
        """The plan tree (:func:`aspen.optimizer.cost.cost_of`'s form) rooted at ``alt``,
        following ``best`` (each OR node's chosen AND node); sort enforcers are implicit."""
        if alt.op == "scan":
            return {"scan": next(iter(alt.parent.expr))}
        if alt.op == "sort":
            assert alt.left is not None
            return self.plan_json(best[alt.left], best)
        assert alt.left is not None and alt.right is not None
        out = {"join": alt.method, "left": self.plan_json(best[alt.left], best),
               "right": self.plan_json(best[alt.right], best)}
        if alt.key is not None:
            out["key"] = costs.key_label(alt.key)
        return out
