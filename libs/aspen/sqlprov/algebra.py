"""The relational algebra a query is parsed into: scans, selections, projections, joins (inner,
left, semi, anti), set operations, DISTINCT and aggregation with HAVING.

Every node names its output columns; the names are unique over the whole query (a scan of
``link`` as ``a`` outputs ``a__src``, …), so expressions (sqlglot trees over unqualified
columns) and the generated SQL never need a qualifier. Bag semantics, as SQL.

>>> from sqlglot import exp
>>> scan = Scan("link", "a", ("src", "dst", "cost"))
>>> scan.outputs
('a__src', 'a__dst', 'a__cost')
>>> cheap = exp.GT(this=exp.column("a__cost"), expression=exp.Literal.number(1))
>>> Filter(scan, cheap).outputs == scan.outputs
True
>>> [s.table for s in scans(Join(scan, Scan("sensor", "s", ("id",)), "inner", None))]
['link', 'sensor']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["Aggregate", "Distinct", "Filter", "Join", "Node", "Project", "Query", "Scan",
           "SemiJoin", "SetOp", "children", "scans"]


@dataclass(frozen=True)
class Scan:
    """One occurrence of a table; its columns are ``<prefix>__<column>``."""

    table: str
    prefix: str
    columns: tuple[str, ...]

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(f"{self.prefix}__{c}" for c in self.columns)


@dataclass(frozen=True)
class Filter:
    """σ: the rows of ``child`` for which ``condition`` holds."""

    child: Node
    condition: exp.Expression

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.child.outputs


@dataclass(frozen=True)
class Project:
    """Π (bag): one row per input row, the expressions ``items`` as named."""

    child: Node
    items: tuple[tuple[str, exp.Expression], ...]

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.items)


@dataclass(frozen=True)
class Join:
    """⋈: ``kind`` ``inner`` or ``left`` (outer); ``condition`` None is a cross join."""

    left: Node
    right: Node
    kind: str
    condition: exp.Expression | None

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.left.outputs + self.right.outputs


@dataclass(frozen=True)
class SemiJoin:
    """⋉ (EXISTS, IN) or, with ``anti``, ▷ (NOT EXISTS): the left rows with (without) a right
    row satisfying ``condition``."""

    left: Node
    right: Node
    condition: exp.Expression | None
    anti: bool

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.left.outputs


@dataclass(frozen=True)
class SetOp:
    """``union_all`` (bag), ``except`` and ``intersect`` (sets), matched by position; its own
    output names."""

    left: Node
    right: Node
    op: str
    names: tuple[str, ...]

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.names


@dataclass(frozen=True)
class Distinct:
    """δ: one row per distinct row of ``child``."""

    child: Node

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.child.outputs


@dataclass(frozen=True)
class Aggregate:
    """γ: one row per group of ``group`` (none: one row for the whole input), the
    ``aggregates``; ``having`` over the output names; ``threshold`` k when HAVING is exactly
    ``COUNT(*) >= k``."""

    child: Node
    group: tuple[tuple[str, exp.Expression], ...]
    aggregates: tuple[tuple[str, exp.Expression], ...]
    having: exp.Expression | None
    threshold: int | None

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.group) + tuple(n for n, _ in self.aggregates)


Node = Union[Scan, Filter, Project, Join, SemiJoin, SetOp, Distinct, Aggregate]  # noqa: UP007


@dataclass(frozen=True)
class Query:
    """A whole statement: the algebra, the user's column names (one per output of ``root``),
    ORDER BY (output index, descending) and LIMIT."""

    root: Node
    names: tuple[str, ...]
    order: tuple[tuple[int, bool], ...] = ()
    limit: int | None = None


def children(node: Node) -> tuple[Node, ...]:
    """The inputs of ``node``."""
    if isinstance(node, Scan):
        return ()
    if isinstance(node, Join | SemiJoin | SetOp):
        return (node.left, node.right)
    return (node.child,)


def scans(node: Node) -> Iterator[Scan]:
    """Every table occurrence under ``node``, left to right."""
    if isinstance(node, Scan):
        yield node
    for child in children(node):
        yield from scans(child)
