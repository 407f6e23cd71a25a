"""PAT (4), remove redundant attributes: a projection item, a scan's column or an aggregate
that no ancestor reads is dropped (the needed columns of :func:`aspen.sqlprov.properties.
needed`). A node keeps at least one column; a DISTINCT, a set operation and a group read all of
their input's. The instrumented query carries fewer columns; results and formulas stay.

>>> from aspen.sqlprov.parse import parse_sql
>>> q = parse_sql("SELECT q.n FROM (SELECT src AS n, cost * 2 AS c FROM link) q")
>>> prune_columns(q, Context()).root.child.outputs
('_o1',)
"""

from __future__ import annotations

from dataclasses import replace

from aspen.sqlprov.algebra import Aggregate, Node, Project, Query, Scan, children
from aspen.sqlprov.pats.common import Context, with_children
from aspen.sqlprov.properties import needed

__all__ = ["prune_columns"]


def prune_columns(query: Query, context: Context) -> Query:
    """``query`` without the columns no ancestor reads."""
    wanted = needed(query.root)
    changed = False

    def go(node: Node) -> Node:
        nonlocal changed
        use = wanted[id(node)]
        out = with_children(node, tuple(go(c) for c in children(node)))
        if isinstance(out, Scan):
            kept = tuple(c for c, o in zip(out.columns, out.outputs, strict=True) if o in use)
            if kept and kept != out.columns:
                changed = True
                return replace(out, columns=kept)
        elif isinstance(out, Project):
            items = tuple((n, e) for n, e in out.items if n in use)
            if items and items != out.items:
                changed = True
                return replace(out, items=items)
        elif isinstance(out, Aggregate):
            from sqlglot import exp

            read = use | ({c.name for c in out.having.find_all(exp.Column)}
                          if out.having is not None else set())
            aggregates = tuple((n, e) for n, e in out.aggregates if n in read)
            if aggregates != out.aggregates and (aggregates or out.group):
                changed = True
                return replace(out, aggregates=aggregates)
        return out

    root = go(query.root)
    if not changed:
        return query
    context.fired.append("prune_columns")
    return replace(query, root=root)
