"""BDD variable orders from the link graph (Liu 2016, §3.5): depth-first, breadth-first, arrival.

A BDD of reachability provenance is smallest when the variables of links near the start of a
path sit near the top, and paths that share a prefix share it in the order: a **depth-first
traversal of the link graph** does that (Liu 2016, Figs. 9-10: 9 nodes in DFS order vs 18 in BFS
order). This module computes such orders from scratch (:func:`dfs_edge_order`,
:func:`bfs_edge_order`, :func:`arrival_order`), maintains one incrementally as links come and go
(:class:`IncrementalDfsLabeling`, Liu 2016, Algorithm 3), checks one (:func:`is_dfs_order`) and
imposes one on a manager (:func:`order_variables`).

**DFS edge sequence.** A depth-first search of a directed graph that records each edge when it
is examined from its source, examines every edge exactly once, and starts a new tree at an
unvisited node whenever the stack empties, records a *DFS edge sequence* (tree, back, forward
and cross edges all included, "this includes all cyclic edges", Liu 2016, §3.5.3).
:func:`is_dfs_order` decides whether a vector is one, for *some* choice of roots and of
out-edge order; see its docstring for the exact test and what it implies for the labels.

**Incremental labeling: decisions where Liu 2016's Algorithm 3 is ambiguous or not enough.**

* Labels. ``start_index[n]`` is the position of n's first out-edge; ``end_index[n]`` the
  position of the last edge examined before n finishes. A node without out-edges (a leaf) has no
  start, and its end is the position of the edge that first reached it (so, as in the
  pseudocode, ``end_index[x] >= 0`` for a leaf means "x has an incoming edge"). Labels are
  recomputed by one O(|edges|) scan after each change (the pseudocode's "update all labels with
  value larger than …" is also O(|edges|)).
* The test "the edge at ``startInx[y] - 1`` ends in y" (case b) is read as "y is not a DFS root":
  in a DFS sequence the edge just before a non-root's first out-edge is the tree edge into it,
  and the edge before a root's first out-edge never ends in the root.
* Re-traversal: a DFS that examines each node's out-edges in the order of a preferred vector
  and starts trees at the unvisited nodes in the *old* vector's visit order. On a vector that
  already is a DFS sequence it reproduces the vector, so it changes as little as it must.
* Cases (c)/(d) insert the new edge ``(x, y)`` right after ``end_index[x]`` (the end of x's
  visit, so it is x's last examined out-edge). If y was first reached later than that, the
  new edge now reaches y first and y's sub-vector ``[start_index[y], end_index[y]]`` is moved
  right after it, as the pseudocode says. **This move alone is not always a DFS:** if an edge of
  the moved sub-vector points to a node w first reached between the insertion point and y's old
  place, w must now be visited inside y's subtree, with its own edges. Example: edges
  r→x, r→q, q→w, w→z, q→y, y→w, then insert x→y. Only in that situation we re-traverse,
  preferring the moved vector's edge order.
* Deletion (prose only, Liu 2016, §3.5.3). Deleting an edge that did not first reach its target
  just removes it. Deleting a tree edge orphans the target's subtree; the orphans are
  re-attached by a re-traversal preferring the old order: scanning forward, the first remaining
  edge into an orphan n re-attaches n, with the edges reachable from n following it in DFS
  order, repeatedly, as Liu 2016 describes. **We do not drop** edges that are no longer connected to
  the old roots: every live link keeps a variable, so it keeps a position; an orphan no edge
  reaches becomes a new root right after the tree it was orphaned from.
* The guaranteed property, tested against from-scratch DFS on random insert/delete sequences:
  after every operation, ``edges`` holds each current edge once and ``is_dfs_order(edges,
  current_edges)`` is true.

>>> lab = IncrementalDfsLabeling([("A", "B"), ("B", "F"), ("A", "D"), ("D", "F")])
>>> lab.insert(("B", "C"))
True
>>> lab.edges
(('A', 'B'), ('B', 'F'), ('B', 'C'), ('A', 'D'), ('D', 'F'))
>>> lab.start_index["B"], lab.end_index["B"]
(1, 2)
>>> is_dfs_order(lab.edges, lab.edges)
True
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from aspen.errors import UnknownKeyError
from aspen.provenance.bdd import ProvenanceManager

__all__ = [
    "Edge",
    "IncrementalDfsLabeling",
    "arrival_order",
    "bfs_edge_order",
    "dfs_edge_order",
    "dfs_order_violation",
    "is_dfs_order",
    "order_variables",
]

Edge = tuple[Hashable, Hashable]


def _edge_list(edges: Iterable[Edge] | Any) -> list[Edge]:
    """Distinct edges in first-arrival order (accepts a networkx graph too)."""
    if hasattr(edges, "edges") and callable(edges.edges):
        edges = edges.edges()
    out: list[Edge] = []
    seen: set[Edge] = set()
    for edge in edges:
        edge = (edge[0], edge[1])
        if edge not in seen:
            seen.add(edge)
            out.append(edge)
    return out


def _adjacency(edge_list: Sequence[Edge]) -> dict[Hashable, list[Edge]]:
    out: dict[Hashable, list[Edge]] = {}
    for edge in edge_list:
        out.setdefault(edge[0], []).append(edge)
    return out


def _root_candidates(edge_list: Sequence[Edge], roots: Iterable[Hashable] | None) -> list:
    """Given roots, then sources (no incoming edge), then every other source node of an edge."""
    targets = {y for _x, y in edge_list}
    sources: list[Hashable] = []
    seen: set[Hashable] = set()
    for x, _y in edge_list:
        if x not in seen:
            seen.add(x)
            sources.append(x)
    return [
        *(roots or ()),
        *(x for x in sources if x not in targets),
        *(x for x in sources if x in targets),
    ]


def _dfs(out: Mapping[Hashable, list[Edge]], roots: Iterable[Hashable]) -> list[Edge]:
    """Edges in the order a DFS from ``roots`` (in turn) examines them (iterative)."""
    visited: set[Hashable] = set()
    order: list[Edge] = []
    for root in roots:
        if root in visited:
            continue
        visited.add(root)
        stack = [iter(out.get(root, ()))]
        while stack:
            edge = next(stack[-1], None)
            if edge is None:
                stack.pop()
                continue
            order.append(edge)
            y = edge[1]
            if y not in visited:
                visited.add(y)
                stack.append(iter(out.get(y, ())))
    return order


def dfs_edge_order(edges: Iterable[Edge] | Any,
                   roots: Iterable[Hashable] | None = None) -> list[Edge]:
    """Edges in depth-first examination order.

    Out-edges are examined in arrival order; trees start at ``roots`` (in order), then at the
    nodes without incoming edges, then at any node still unvisited (cycles), each in order of
    first appearance as a source. Every edge appears exactly once.

    >>> fig9 = [("A", "B"), ("B", "F"), ("B", "C"), ("C", "F"),
    ...         ("A", "D"), ("D", "F"), ("A", "E"), ("E", "D")]
    >>> [fig9.index(e) for e in dfs_edge_order(fig9)]
    [0, 1, 2, 3, 4, 5, 6, 7]
    """
    edge_list = _edge_list(edges)
    return _dfs(_adjacency(edge_list), _root_candidates(edge_list, roots))


def bfs_edge_order(edges: Iterable[Edge] | Any,
                   roots: Iterable[Hashable] | None = None) -> list[Edge]:
    """Edges in breadth-first order: all out-edges of a node when it is dequeued.

    Roots and out-edge order as in :func:`dfs_edge_order`.

    >>> fig9 = [("A", "B"), ("B", "F"), ("B", "C"), ("C", "F"),
    ...         ("A", "D"), ("D", "F"), ("A", "E"), ("E", "D")]
    >>> [fig9.index(e) for e in bfs_edge_order(fig9)]
    [0, 4, 6, 1, 2, 5, 7, 3]
    """
    edge_list = _edge_list(edges)
    out = _adjacency(edge_list)
    visited: set[Hashable] = set()
    order: list[Edge] = []
    for root in _root_candidates(edge_list, roots):
        if root in visited:
            continue
        visited.add(root)
        queue = deque([root])
        while queue:
            node = queue.popleft()
            for edge in out.get(node, ()):
                order.append(edge)
                if edge[1] not in visited:
                    visited.add(edge[1])
                    queue.append(edge[1])
    return order


def arrival_order(edges: Iterable[Edge] | Any) -> list[Edge]:
    """Edges in the order they arrived (first arrival of each), the naive baseline of Liu 2016.

    >>> arrival_order([("a", "b"), ("b", "c"), ("a", "b")])
    [('a', 'b'), ('b', 'c')]
    """
    return _edge_list(edges)


def dfs_order_violation(edges_vector: Iterable[Edge], graph: Iterable[Edge] | Any) -> str | None:
    """Why ``edges_vector`` is not a DFS edge sequence of ``graph``, or None if it is.

    See :func:`is_dfs_order` for the definition.
    """
    vector = [(e[0], e[1]) for e in edges_vector]
    if len(set(vector)) != len(vector):
        return "an edge appears twice"
    wanted = set(_edge_list(graph))
    if set(vector) != wanted:
        missing, extra = wanted - set(vector), set(vector) - wanted
        return f"edges missing {sorted(map(str, missing))[:3]}, extra {sorted(map(str, extra))[:3]}"
    remaining: dict[Hashable, int] = {}
    for x, _y in vector:
        remaining[x] = remaining.get(x, 0) + 1
    visited: set[Hashable] = set()
    stack: list[Hashable] = []
    on_stack: set[Hashable] = set()

    def pop() -> str | None:
        node = stack.pop()
        on_stack.discard(node)
        if remaining.get(node, 0):
            return f"{node!r} finishes with {remaining[node]} out-edge(s) not yet examined"
        return None

    for i, (x, y) in enumerate(vector):
        if x in on_stack:
            while stack[-1] != x:
                if (why := pop()) is not None:
                    return f"at position {i}: {why}"
        else:
            while stack:
                if (why := pop()) is not None:
                    return f"at position {i}: {why}"
            if x in visited:
                return f"at position {i}: edge {x!r}→{y!r} leaves {x!r} after it finished"
            visited.add(x)
            stack.append(x)
            on_stack.add(x)
        remaining[x] -= 1
        if y not in visited:
            visited.add(y)
            stack.append(y)
            on_stack.add(y)
    return None


def is_dfs_order(edges_vector: Iterable[Edge], graph: Iterable[Edge] | Any) -> bool:
    """Whether ``edges_vector`` is a DFS edge sequence of ``graph`` (edges or a networkx graph).

    Definition: the vector holds every edge of the graph exactly once, and some depth-first
    search of the whole graph records exactly this sequence, where the search keeps a stack of
    open nodes, examines an out-edge ``(x, y)`` only while x is the top of the stack, pushes y
    if y was never visited, pops a node only once all its out-edges have been examined, and
    starts a new tree at a **never visited** node only when the stack has emptied (roots and
    the order of each node's out-edges are free). The test replays the vector with that stack
    in O(|edges|).

    Consequences (what the labels of :class:`IncrementalDfsLabeling` rely on): each node n's
    *interval*, from its first out-edge to the last edge examined before it is popped, contains
    all of n's out-edges and the intervals of every node first reached inside it; two intervals
    are nested or disjoint; and (white-path theorem) every edge leaving a node reachable from n
    through nodes not yet visited when n was reached lies inside n's interval.

    >>> is_dfs_order([("a", "b"), ("b", "c"), ("a", "c")], [("a", "c"), ("a", "b"), ("b", "c")])
    True
    >>> is_dfs_order([("a", "b"), ("a", "c"), ("b", "c")], [("a", "c"), ("a", "b"), ("b", "c")])
    False
    """
    return dfs_order_violation(edges_vector, graph) is None


class IncrementalDfsLabeling:
    """Liu 2016, Algorithm 3: keep ``edges`` a DFS edge sequence while links come and go.

    See the module docstring for the cases and the decisions taken. ``last_case`` tells which
    path the last :meth:`insert` / :meth:`delete` took: ``"a"``, ``"b-append"``, ``"b-before"``,
    ``"c"``, ``"d"`` (with ``"+move"`` when y's sub-vector moved, ``"+retraverse"`` when the
    move alone was not a DFS), ``"del"`` (a non-tree edge) or ``"del+retraverse"``.
    """

    def __init__(self, edges: Iterable[Edge] = ()) -> None:
        self._edges: list[Edge] = []
        self._out: dict[Hashable, set[Edge]] = {}
        self._in_degree: dict[Hashable, int] = {}
        self._position: dict[Edge, int] = {}
        self._start: dict[Hashable, int] = {}
        self._end: dict[Hashable, int] = {}
        self._first_seen: dict[Hashable, int] = {}  # position where the node is first reached
        self._tree_edge: dict[Hashable, int] = {}  # position of the edge that first reached it
        self.last_case = ""
        for edge in edges:
            self.insert(edge)

    @classmethod
    def from_dfs_order(cls, edges: Iterable[Edge]) -> IncrementalDfsLabeling:
        """A labeling holding ``edges``, already a DFS edge sequence (e.g. of
        :func:`dfs_edge_order`), in one O(|edges|) scan (inserting them one by one is quadratic).

        >>> IncrementalDfsLabeling.from_dfs_order([("a", "b"), ("b", "c")]).end_index["a"]
        1
        """
        lab = cls()
        vector = [(e[0], e[1]) for e in edges]
        for x, y in vector:
            lab._out.setdefault(x, set()).add((x, y))
            lab._in_degree[y] = lab._in_degree.get(y, 0) + 1
        lab._set(vector)
        return lab

    # -- views ----------------------------------------------------------------------------------
    @property
    def edges(self) -> tuple[Edge, ...]:
        """The current order: ``edges[i]`` maps to the BDD variable at level i."""
        return tuple(self._edges)

    @property
    def start_index(self) -> Mapping[Hashable, int]:
        """Node → position of its first out-edge (nodes with out-edges only)."""
        return MappingProxyType(self._start)

    @property
    def end_index(self) -> Mapping[Hashable, int]:
        """Node → position of the last edge examined before it finishes (see module docstring)."""
        return MappingProxyType(self._end)

    def position(self, edge: Edge) -> int:
        """Where ``edge`` is in :attr:`edges`."""
        try:
            return self._position[(edge[0], edge[1])]
        except KeyError:
            raise UnknownKeyError(f"edge {edge!r} is not in the order") from None

    def __contains__(self, edge: object) -> bool:
        return edge in self._position

    def __len__(self) -> int:
        return len(self._edges)

    def is_root(self, node: Hashable) -> bool:
        """Whether ``node`` starts a DFS tree (it is in the graph and no edge reached it first)."""
        return node in self._first_seen and node not in self._tree_edge

    # -- changes --------------------------------------------------------------------------------
    def insert(self, edge: Edge) -> bool:
        """Add link ``edge = (x, y)``; False if it is already there. O(|edges|)."""
        x, y = edge = (edge[0], edge[1])
        if edge in self._position:
            return False
        old = self._edges
        if x not in self._first_seen:  # x is a new node: cases (a) and (b)
            if not self._out.get(y):
                case, new = "a", [*old, edge]
            elif not self.is_root(y):
                case, new = "b-append", [*old, edge]
            else:
                at = self._start[y]
                case, new = "b-before", [*old[:at], edge, *old[at:]]
        else:  # x is in the graph: cases (c) and (d)
            case = "d" if self._out.get(x) else "c"
            at = self._end[x] + 1
            y_later = y in self._first_seen and self._first_seen[y] >= at
            if y_later and self._out.get(y):
                lo, hi = self._start[y], self._end[y]
                block = old[lo : hi + 1]
                rest = [*old[:lo], *old[hi + 1 :]]
                new = [*rest[:at], edge, *block, *rest[at:]]
                case += "+move"
                if self._move_breaks_dfs(block, y, at, lo):
                    new = _dfs(_adjacency(new), _first_mentions(old))
                    case += "+retraverse"
            else:
                new = [*old[:at], edge, *old[at:]]
        self._out.setdefault(x, set()).add(edge)
        self._in_degree[y] = self._in_degree.get(y, 0) + 1
        self._set(new)
        self.last_case = case
        return True

    def delete(self, edge: Edge) -> None:
        """Remove link ``edge``, re-attaching what it orphaned (see module docstring)."""
        x, y = edge = (edge[0], edge[1])
        at = self.position(edge)
        was_tree_edge = self._tree_edge.get(y) == at
        new = [*self._edges[:at], *self._edges[at + 1 :]]
        self._out[x].discard(edge)
        if not self._out[x]:
            del self._out[x]
        self._in_degree[y] -= 1
        if not self._in_degree[y]:
            del self._in_degree[y]
        if was_tree_edge:
            new = _dfs(_adjacency(new), _first_mentions(self._edges))
            self.last_case = "del+retraverse"
        else:
            self.last_case = "del"
        self._set(new)

    # -- internals ------------------------------------------------------------------------------
    def _move_breaks_dfs(self, block: Sequence[Edge], y: Hashable, at: int, lo: int) -> bool:
        """Whether a moved edge of y's sub-vector reaches a node first seen in ``[at, lo)``."""
        return any(w != y and at <= self._first_seen.get(w, -1) < lo for _u, w in block)

    def _set(self, new: list[Edge]) -> None:
        """Install a new vector and recompute every label in one scan."""
        self._edges = new
        self._position = {e: i for i, e in enumerate(new)}
        start: dict[Hashable, int] = {}
        end: dict[Hashable, int] = {}
        first_seen: dict[Hashable, int] = {}
        tree_edge: dict[Hashable, int] = {}
        stack: list[Hashable] = []
        on_stack: set[Hashable] = set()

        def pop_until(node: Hashable | None, i: int) -> None:
            while stack and stack[-1] != node:
                done = stack.pop()
                on_stack.discard(done)
                end[done] = i - 1

        for i, (x, y) in enumerate(new):
            if x in on_stack:
                pop_until(x, i)
            else:
                pop_until(None, i)
                first_seen[x] = i
                stack.append(x)
                on_stack.add(x)
            start.setdefault(x, i)
            if y not in first_seen:
                first_seen[y] = i
                tree_edge[y] = i
                stack.append(y)
                on_stack.add(y)
        pop_until(None, len(new))
        self._start, self._end = start, end
        self._first_seen, self._tree_edge = first_seen, tree_edge


def _first_mentions(vector: Sequence[Edge]) -> list[Hashable]:
    """Nodes in order of first mention (source before target): a DFS vector's visit order.

    The re-traversal takes its roots in the *old* vector's visit order, so old roots keep their
    order and an orphan that no edge re-attaches becomes a root right after its old tree.
    """
    seen: dict[Hashable, None] = {}
    for x, y in vector:
        seen.setdefault(x, None)
        seen.setdefault(y, None)
    return list(seen)


def order_variables(
    manager: ProvenanceManager,
    edge_order: Iterable[Edge],
    var_of_edge: Mapping[Edge, str | Iterable[str]] | Callable[[Edge], str | Iterable[str] | None],
) -> list[str]:
    """Put the variables of ``edge_order``'s links at the top of ``manager``'s order, in order.

    ``var_of_edge`` gives each link's variable or variables (several live instances are placed
    together, in the given order); links without one are skipped. Returns the names placed.

    >>> m = ProvenanceManager(backend="python")
    >>> _ = m.var("v2"), m.var("v1")
    >>> order_variables(m, [("a", "b"), ("b", "c")], {("a", "b"): "v1", ("b", "c"): ["v2"]})
    ['v1', 'v2']
    >>> m.order
    ['v1', 'v2']
    """
    names: list[str] = []
    seen: set[str] = set()
    for edge in edge_order:
        found = var_of_edge(edge) if callable(var_of_edge) else var_of_edge.get(edge)
        if found is None:
            continue
        for name in [found] if isinstance(found, str) else found:
            if name not in seen:
                seen.add(name)
                names.append(name)
    manager.set_order(names)
    return names
