"""The physical plan Spark ran for a query: its join operators and their observed rows.

After a DataFrame's own query execution has run (``localCheckpoint`` runs it; a ``write``
would plan a new execution of its own), ``frame._jdf.queryExecution().executedPlan()`` is the
tree of operators that ran, each with its SQL metrics filled: ``numOutputRows`` of a join, a
filter, a scan, a broadcast exchange (Project, Sort and shuffle Exchange keep none). With
adaptive execution off (:mod:`aspen.queries.execute` sets it) that tree is final; an
``AdaptiveSparkPlan`` or query stage met anyway is looked through.

:func:`physical_tree` copies it into Python once (:class:`PhysicalNode`). A run names every
relation's columns ``alias__column`` (:func:`aspen.queries.names.flat_name`), so the relations
under an operator are the alias prefixes of the column names its subtree outputs: that is how
each join of the chosen plan is found among the operators that ran (:func:`find_join`), and
each relation's scan (:func:`scan_rows`: the rows out of its scan — of a base table, out of its
grouping by key — after its filters, Spark's inferred ``IS NOT NULL`` of join keys included).

>>> leaf = PhysicalNode("Scan parquet", 5, None, ("src", "dst"), ())
>>> proj = PhysicalNode("Project", None, None, ("a__src", "a__dst"), (leaf,))
>>> sorted(proj.aliases({"a", "b"})), input_rows(proj), describe(proj)
(['a'], 5, 'Project')
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aspen.queries.names import split_flat_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["EXPECTED_OPERATORS", "JOIN_OPERATORS", "PhysicalNode", "describe", "find_join",
           "input_rows", "matches", "physical_tree", "scan_rows"]

#: Spark's physical join operators, by node name.
JOIN_OPERATORS = frozenset({"BroadcastHashJoin", "ShuffledHashJoin", "SortMergeJoin",
                            "BroadcastNestedLoopJoin", "CartesianProduct"})
#: The operator (and build side) that runs each join method of a plan, the right child built.
EXPECTED_OPERATORS: dict[str, tuple[str, str | None]] = {
    "broadcast_hash": ("BroadcastHashJoin", "BuildRight"),
    "shuffle_hash": ("ShuffledHashJoin", "BuildRight"),
    "sort_merge": ("SortMergeJoin", None),
}
#: Operators a scan's rows pass through unchanged or filtered, below its first exchange/join.
_SCAN_CHAIN = ("Filter", "Project", "ColumnarToRow", "InputAdapter", "WholeStageCodegen")
#: The operators of a base table's grouping by key (aspen.queries.base_tuples) above its scan:
#: a partial and a final aggregate, with the exchange and sorts between them.
_GROUPING = ("HashAggregate", "SortAggregate", "ObjectHashAggregate", "Exchange", "Sort")


@dataclass(frozen=True)
class PhysicalNode:
    """One operator that ran: its name, its ``numOutputRows`` (None without that metric), the
    build side of a hash join, the names of its output columns, its children."""

    name: str
    rows: int | None
    build_side: str | None
    outputs: tuple[str, ...]
    children: tuple[PhysicalNode, ...]

    @property
    def is_join(self) -> bool:
        """Whether this is a join operator."""
        return self.name in JOIN_OPERATORS

    def walk(self) -> Iterator[PhysicalNode]:
        """This node and every node below it, parents first."""
        yield self
        for child in self.children:
            yield from child.walk()

    def aliases(self, known: Set[str]) -> frozenset[str]:
        """The relations (of ``known``) whose columns this subtree outputs somewhere."""
        out = set()
        for node in self.walk():
            for name in node.outputs:
                parts = split_flat_name(name)
                if parts is not None and parts[0] in known:
                    out.add(parts[0])
        return frozenset(out)


def _children(jnode: Any) -> list[Any]:
    name = str(jnode.nodeName())
    if name == "AdaptiveSparkPlan":
        return [jnode.executedPlan()]
    if name.endswith("QueryStage"):
        return [jnode.plan()]
    seq = jnode.children()
    return [seq.apply(i) for i in range(seq.size())]


def _convert(jnode: Any) -> PhysicalNode:
    metric = jnode.metrics().get("numOutputRows")
    rows = int(metric.get().value()) if metric.isDefined() else None
    name = str(jnode.nodeName())
    build = None
    if name in ("BroadcastHashJoin", "ShuffledHashJoin"):
        build = str(jnode.buildSide())
    output = jnode.output()
    outputs = tuple(str(output.apply(i).name()) for i in range(output.size()))
    return PhysicalNode(name, rows, build, outputs, tuple(_convert(c) for c in _children(jnode)))


def physical_tree(frame: DataFrame) -> PhysicalNode:
    """The executed plan of ``frame`` (run it first), copied into Python with its metrics."""
    return _convert(frame._jdf.queryExecution().executedPlan())


def describe(node: PhysicalNode) -> str:
    """An operator as text: ``BroadcastHashJoin(BuildRight)``, ``SortMergeJoin``."""
    return f"{node.name}({node.build_side})" if node.build_side else node.name


def matches(method: str, node: PhysicalNode) -> bool:
    """Whether ``node`` is the operator that runs the join method ``method``."""
    name, build = EXPECTED_OPERATORS[method]
    return node.name == name and node.build_side == build


def input_rows(node: PhysicalNode) -> int | None:
    """The rows ``node`` outputs: its own metric, else the first one below it through
    operators of one input (a Project, Sort or Exchange keeps the rows it is given)."""
    while node.rows is None and len(node.children) == 1:
        node = node.children[0]
    return node.rows


def find_join(tree: PhysicalNode, left: frozenset[str], right: frozenset[str],
              known: Set[str]) -> tuple[PhysicalNode | None, bool]:
    """The join operator whose inputs hold the relations ``left`` and ``right``, and whether
    its inputs are the other way round; (None, False) when no operator joins them."""
    for node in tree.walk():
        if node.is_join and len(node.children) == 2:
            first, second = (c.aliases(known) for c in node.children)
            if (first, second) == (left, right):
                return node, False
            if (first, second) == (right, left):
                return node, True
    return None, False


def scan_rows(tree: PhysicalNode, alias: str, known: Set[str], grouped: bool = False
              ) -> int | None:
    """The rows relation ``alias``'s scan gave after its filters: from a leaf (a scan) up
    through filters and projections — and with ``grouped`` (a base table read per tuple)
    through its two aggregates by key — the highest operator with a row count."""
    def climb(node: PhysicalNode, path: list[PhysicalNode]) -> Iterator[list[PhysicalNode]]:
        path = [*path, node]
        if not node.children:
            yield path
        for child in node.children:
            yield from climb(child, path)

    for path in climb(tree, []):
        chain, aggregates = [path[-1]], 0
        for node in reversed(path[:-1]):
            if grouped and aggregates < 2 and node.name.startswith(_GROUPING):
                aggregates += node.name.endswith("Aggregate")
            elif not node.name.startswith(_SCAN_CHAIN):
                break
            chain.append(node)
        relations = {a for node in chain for a in node.aliases(known)} or (
            set(known) if len(known) == 1 else set())
        if relations == {alias}:
            counted = [node.rows for node in chain if node.rows is not None]
            return counted[-1] if counted else None
    return None
