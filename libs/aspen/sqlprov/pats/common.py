"""What every rewrite rule shares: its context (the tables, the choice callback) and a node
rebuilt over new children.

>>> from aspen.sqlprov.algebra import Distinct, Scan
>>> d = Distinct(Scan("link", "l", ("src",)))
>>> with_children(d, (Scan("link", "m", ("src",)),)).child.prefix
'm'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from aspen.sqlprov.algebra import Join, Node, Scan, SemiJoin, SetOp
from aspen.sqlprov.tables import SQL_TABLES, SqlTable

__all__ = ["Choose", "Context", "first_option", "with_children"]

#: A choice point's callback: its label and options → the option taken (seed 001's makeChoice).
Choose = Callable[[str, tuple[str, ...]], int]


def first_option(label: str, options: tuple[str, ...]) -> int:
    """The default callback: always the first option (the heuristic one)."""
    return 0


@dataclass
class Context:
    """A rewrite's inputs: the tables a query may read and the choice callback; ``fired`` lists
    the rules that changed the algebra, in order."""

    tables: Mapping[str, SqlTable] = field(default_factory=lambda: SQL_TABLES)
    choose: Choose = first_option
    fired: list[str] = field(default_factory=list)


def with_children(node: Node, kids: tuple[Node, ...]) -> Node:
    """``node`` over ``kids`` (the same object when nothing changed)."""
    if isinstance(node, Scan):
        return node
    if isinstance(node, Join | SemiJoin | SetOp):
        left, right = kids
        if left is node.left and right is node.right:
            return node
        return replace(node, left=left, right=right)
    (child,) = kids
    return node if child is node.child else replace(node, child=child)
