"""PAT (2), remove δ by key: a DISTINCT whose input has a key (so no duplicate rows) is the
identity. Its formulas stay: each answer row had one contributing input row.

>>> from aspen.sqlprov.parse import parse_sql
>>> q = parse_sql("SELECT DISTINCT src, dst FROM link")
>>> type(remove_distinct_by_key(q, Context()).root).__name__
'Project'
"""

from __future__ import annotations

from dataclasses import replace

from aspen.sqlprov.algebra import Distinct, Node, Query, children
from aspen.sqlprov.pats.common import Context, with_children
from aspen.sqlprov.properties import keys

__all__ = ["remove_distinct_by_key"]


def remove_distinct_by_key(query: Query, context: Context) -> Query:
    """``query`` with every DISTINCT over a keyed input removed."""
    changed = False

    def go(node: Node) -> Node:
        nonlocal changed
        node = with_children(node, tuple(go(c) for c in children(node)))
        if isinstance(node, Distinct) and keys(node.child, context.tables):
            changed = True
            return node.child
        return node

    root = go(query.root)
    if not changed:
        return query
    context.fired.append("remove_distinct_by_key")
    return replace(query, root=root)
