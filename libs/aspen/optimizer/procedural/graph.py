"""The and-or graph the procedural re-optimizers keep: integer ids, reverse edges, a stat index.

:class:`AndOrGraph` numbers the OR nodes of a :class:`~aspen.optimizer.space.SearchSpace` as
they are reached and the AND nodes of an OR node, in :meth:`~SearchSpace.split` order, when it is
*expanded* — so among the alternatives of one OR node a smaller id is an earlier one (the
tie-break every optimizer shares). It keeps the reverse edges (an OR node's parent AND nodes,
among the expanded ones) and an index from each statistic to the AND nodes whose local cost
reads it, so a change finds its affected AND nodes without scanning the graph.

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace, SpaceOptions
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> g = AndOrGraph(SearchSpace(q, SpaceOptions(methods=("shuffle_hash",))))
>>> g.expand_all()
>>> len(g.nodes), len(g.and_nodes)
(3, 4)
>>> [g.and_nodes[j].label() for j in g.affected({("rows", "t")})]
['(a,b)=shuffle_hash[(a),(b)]', '(a,b)=shuffle_hash[(b),(a)]', '(a)=scan[]']
"""

from __future__ import annotations

from collections.abc import Iterable

from aspen.optimizer.query import Expr
from aspen.optimizer.space import AndNode, OrNode, SearchSpace
from aspen.optimizer.stats import StatKey

__all__ = ["AndOrGraph"]


class AndOrGraph:
    """OR nodes ``0..len(nodes)-1`` (the root is 0) and AND nodes ``0..len(and_nodes)-1``.

    ``alts[i]`` is the range of OR node ``i``'s AND nodes (None until :meth:`expand`);
    ``and_parent[j]`` / ``and_children[j]`` the OR ids an AND node produces / reads;
    ``parents[i]`` the expanded AND nodes reading OR node ``i``; ``level[i]`` orders children
    before parents (``2·|expr|``, plus one for a required property: a sort reads its own
    expression without it)."""

    def __init__(self, space: SearchSpace) -> None:
        self.space = space
        self.ids: dict[OrNode, int] = {}
        self.nodes: list[OrNode] = []
        self.level: list[int] = []
        self.alts: list[range | None] = []
        self.parents: list[list[int]] = []
        self.and_nodes: list[AndNode] = []
        self.and_parent: list[int] = []
        self.and_children: list[tuple[int, ...]] = []
        self._by_stat: dict[StatKey, list[int]] = {}
        # the statistics an operator reads depend only on the expression it produces
        self._deps: dict[Expr, frozenset[StatKey]] = {}
        self.root = self.intern(space.root)

    def intern(self, node: OrNode) -> int:
        """The id of ``node``, numbering it if it is new (not expanded)."""
        found = self.ids.get(node)
        if found is not None:
            return found
        i = self.ids[node] = len(self.nodes)
        self.nodes.append(node)
        self.level.append(2 * len(node.expr) + (node.prop is not None))
        self.alts.append(None)
        self.parents.append([])
        return i

    def expand(self, i: int) -> range:
        """Number OR node ``i``'s AND nodes (and intern their children) once; their ids."""
        done = self.alts[i]
        if done is not None:
            return done
        start = len(self.and_nodes)
        for alt in self.space.split(self.nodes[i]):
            j = len(self.and_nodes)
            kids = tuple(self.intern(c) for c in alt.children)
            self.and_nodes.append(alt)
            self.and_parent.append(i)
            self.and_children.append(kids)
            for c in kids:
                self.parents[c].append(j)
            for key in self._depends_on(alt):
                self._by_stat.setdefault(key, []).append(j)
        self.alts[i] = range(start, len(self.and_nodes))
        return self.alts[i]

    def expand_all(self) -> None:
        """Expand every OR node reachable from the root."""
        todo = [self.root]
        while todo:
            i = todo.pop()
            if self.alts[i] is None:
                for j in self.expand(i):
                    todo.extend(c for c in self.and_children[j] if self.alts[c] is None)

    def _depends_on(self, alt: AndNode) -> frozenset[StatKey]:
        expr = alt.parent.expr
        deps = self._deps.get(expr)
        if deps is None:
            deps = self._deps[expr] = self.space.depends_on(alt)
        return deps

    def affected(self, moved: Iterable[StatKey]) -> list[int]:
        """The expanded AND nodes whose local cost may change when ``moved`` change (the rule
        of :meth:`SearchSpace.affected`: a ``params`` change affects every node), by id."""
        moved = set(moved)
        if any(kind == "params" for kind, _ in moved):
            return list(range(len(self.and_nodes)))
        hit: set[int] = set()
        for key in moved:
            hit.update(self._by_stat.get(key, ()))
        return sorted(hit)
