"""PAT (3), remove δ by set semantics: a DISTINCT whose output reaches the answer only through
another DISTINCT, an EXISTS or a set operation (operators that do not count; never an
aggregate) changes nothing the answer shows. Its formulas stay: the OR of ORs is the OR.

Removing it is not always cheaper (a DISTINCT can shrink the input of a join above it), so it
is a **choice** (seed 001, §4.3): options ``remove`` (the heuristic) and ``keep``. This algebra
has no bag difference, so the seed's unsound case (set semantics through ``−``) cannot arise.

>>> from aspen.sqlprov.parse import parse_sql
>>> q = parse_sql("SELECT DISTINCT q.n FROM (SELECT DISTINCT dst AS n FROM link) q")
>>> out = remove_distinct_by_set(q, Context())
>>> [type(n).__name__ for n in (out.root, out.root.child, out.root.child.child)]
['Distinct', 'Project', 'Project']
"""

from __future__ import annotations

from dataclasses import replace

from aspen.sqlprov.algebra import Distinct, Node, Query, children
from aspen.sqlprov.pats.common import Context, with_children
from aspen.sqlprov.properties import set_semantics

__all__ = ["OPTIONS", "remove_distinct_by_set"]

#: The options of each choice point, the heuristic first.
OPTIONS = ("remove", "keep")


def remove_distinct_by_set(query: Query, context: Context) -> Query:
    """``query`` with each DISTINCT under set semantics removed or kept, as chosen."""
    flags = set_semantics(query.root)
    changed = False

    def go(node: Node) -> Node:
        nonlocal changed
        if isinstance(node, Distinct) and flags[id(node)]:
            label = f"DISTINCT ({', '.join(node.outputs)}) under set semantics"
            if context.choose(label, OPTIONS) == 0:
                changed = True
                return go(node.child)
        return with_children(node, tuple(go(c) for c in children(node)))

    root = go(query.root)
    if not changed:
        return query
    context.fired.append("remove_distinct_by_set")
    return replace(query, root=root)
