"""Selection move-around by equivalence classes (seed 001, §3.4): a constant that a column must
equal on every row that reaches the answer is filtered for as early as the column exists —
down both sides of a join, into the subquery of an EXISTS or NOT EXISTS (a row of it that
cannot match is never a witness), into both sides of a set operation (and from the left side
of an EXCEPT or INTERSECT into its right: a right row unlike every left row never matches).

A filter is added only where the input's own classes do not already bind the column to that
constant, so the rule reaches a fixpoint in one pass. Results and formulas stay: the rows
filtered out early would have been filtered out, or never matched, later. Not into the right
side of a LEFT join from above (that would turn a match into a NULL-padded row).

>>> from aspen.sqlprov.parse import parse_sql
>>> q = parse_sql("SELECT l.src FROM link l WHERE l.dst = 'c' AND NOT EXISTS "
...               "(SELECT 1 FROM triggered t WHERE t.id = l.dst)")
>>> out = push_equalities(q, Context())
>>> out.root.child.right.condition.sql()
"t__id = 'c'"
"""

from __future__ import annotations

from dataclasses import replace

import sqlglot
from sqlglot import exp

from aspen.sqlprov.algebra import (
    Aggregate,
    Distinct,
    Filter,
    Join,
    Node,
    Project,
    Query,
    Scan,
    SemiJoin,
    SetOp,
)
from aspen.sqlprov.pats.common import Context
from aspen.sqlprov.properties import Class, classes, column_of, merge, restrict
from aspen.sqlprov.properties import _from_condition as from_condition

__all__ = ["push_equalities"]


def _bound(node: Node) -> set[tuple[str, str]]:
    """(column, constant) pairs ``node``'s own classes already guarantee."""
    return {(c, k.constant) for k in classes(node) if k.constant for c in k.columns}


def _filtered(node: Node, above: tuple[Class, ...], enforced: frozenset[tuple[str, str]]
              ) -> Node:
    """``node`` under a filter for each constant of ``above`` on its columns not yet bound
    (by its own classes, or by the filters right above it: ``enforced``)."""
    have = _bound(node) | enforced
    wanted = [(c, k.constant) for k in restrict(above, node.outputs) if k.constant
              for c in sorted(k.columns) if (c, k.constant) not in have]
    if not wanted:
        return node
    tests = [exp.EQ(this=exp.column(c), expression=sqlglot.parse_one(lit))
             for c, lit in wanted]
    return Filter(node, exp.and_(*tests))


def _renamed(found: tuple[Class, ...], names: dict[str, str]) -> tuple[Class, ...]:
    """``found`` over ``names`` (old → new), classes restricted to the renamed columns."""
    return tuple(Class(frozenset(names[c] for c in k.columns), k.constant)
                 for k in restrict(found, names))


def push_equalities(query: Query, context: Context) -> Query:
    """``query`` with each column bound to a constant filtered for where it is read first."""
    changed = False

    def down(node: Node, above: tuple[Class, ...],
             enforced: frozenset[tuple[str, str]] = frozenset()) -> Node:
        """``node`` rewritten, knowing ``above`` holds on each of its rows that matters and the
        filters right above it test ``enforced``."""
        nonlocal changed
        if isinstance(node, Scan):
            out = _filtered(node, above, enforced)
            changed |= out is not node
            return out
        if isinstance(node, Filter):
            own = merge(from_condition(node.condition))
            tested = {(c, k.constant) for k in own if k.constant for c in k.columns}
            here = merge([*above, *own])
            return replace(node, child=down(node.child, here, enforced | tested))
        if isinstance(node, Project):
            back = {}
            for name, e in node.items:
                source = column_of(e)
                if source is not None:
                    back[name] = source
            return replace(node, child=down(node.child, _renamed(above, back)))
        if isinstance(node, Distinct):
            return replace(node, child=down(node.child, above))
        if isinstance(node, Aggregate):
            back = {n: column_of(e) for n, e in node.group if column_of(e) is not None}
            return replace(node, child=down(node.child, _renamed(above, back)))  # type: ignore[arg-type]
        if isinstance(node, Join):
            if node.kind == "left":
                right_known = merge([*classes(node.left), *restrict(above, node.left.outputs),
                                     *from_condition(node.condition)])
                return replace(node, left=down(node.left, above),
                               right=down(node.right, restrict(right_known,
                                                               node.right.outputs)))
            here = merge([*above, *classes(node.left), *classes(node.right),
                          *from_condition(node.condition)])
            return replace(node, left=down(node.left, here), right=down(node.right, here))
        if isinstance(node, SemiJoin):
            known = merge([*above, *classes(node.left), *from_condition(node.condition)])
            return replace(node, left=down(node.left, above),
                           right=down(node.right, restrict(known, node.right.outputs)))
        if isinstance(node, SetOp):
            lnames = dict(zip(node.names, node.left.outputs, strict=True))
            rnames = dict(zip(node.names, node.right.outputs, strict=True))
            left_above, right_above = _renamed(above, lnames), _renamed(above, rnames)
            if node.op != "union_all":  # a right row unlike every left row never matches
                back = dict(zip(node.left.outputs, node.right.outputs, strict=True))
                right_above = merge([*right_above, *_renamed(classes(node.left), back)])
            return replace(node, left=down(node.left, left_above),
                           right=down(node.right, right_above))
        raise TypeError(f"not an algebra node: {node!r}")

    root = down(query.root, ())
    if not changed:
        return query
    context.fired.append("push_equalities")
    return replace(query, root=root)
