"""The order a batch's joined change is computed in, read off the optimizer's plan.

A batch's change of relation *i* is joined with the other relations one at a time
(:mod:`.join`); the order is free — every order gives the same rows — but not the work: a
relation bound early that few rows match prunes the rest. The optimizer's plan tree says
which relations it joins first; the change of relation *i* follows it up from *i*'s leaf: at
each join above, the other side's relations are bound next, that side's own subtree first the
input joined to the relations already bound (its left one when both are), so every step looks
a relation up by the columns it shares with those bound. For ``(a ⋈ b) ⋈ c``: a change of
``a`` binds ``b`` then ``c``; of ``c``, whichever of ``a``, ``b`` it is joined to, then the
other.

>>> from aspen.queries.sql import parse_query
>>> from aspen.queries.incremental.compile import compile_query
>>> plan = compile_query(parse_query("q", "SELECT a.src FROM link a JOIN link b "
...     "ON a.dst = b.src JOIN link c ON b.dst = c.src"))
>>> tree = {"join": "shuffle_hash", "left": {"join": "broadcast_hash", "left": {"scan": "c"},
...         "right": {"scan": "b"}}, "right": {"scan": "a"}}
>>> plan_orders(plan, tree)
((1, 2), (2, 0), (1, 0))
>>> plan_orders(plan, {"scan": "z"}) is None   # not a plan of this query
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aspen.queries.incremental.compile import IncrementalPlan

__all__ = ["follow_plan", "plan_orders"]


def _leaves(node: Mapping[str, Any]) -> list[str]:
    if "scan" in node:
        return [str(node["scan"])]
    return _leaves(node["left"]) + _leaves(node["right"])


def _path(node: Mapping[str, Any], alias: str) -> list[Mapping[str, Any]] | None:
    """The join nodes from ``node`` down to ``alias``'s leaf (None: not under it)."""
    if "scan" in node:
        return [] if node["scan"] == alias else None
    for side in ("left", "right"):
        below = _path(node[side], alias)
        if below is not None:
            return [node, *below]
    return None


def plan_orders(plan: IncrementalPlan, tree: Mapping[str, Any] | None
                ) -> tuple[tuple[int, ...], ...] | None:
    """Per relation of ``plan``, the order its change binds the others in when it follows
    the plan tree ``tree`` (see the module docstring); None when ``tree`` is not a plan of
    exactly these relations (an older query's, or malformed)."""
    positions = {rel.alias: i for i, rel in enumerate(plan.relations)}
    try:
        leaves = _leaves(tree) if isinstance(tree, Mapping) else None
    except (KeyError, TypeError):
        return None
    if leaves is None or sorted(leaves) != sorted(positions) or len(positions) < 2:
        return None
    joined: dict[int, set[int]] = {}
    for source, _, target, _ in plan.edges:
        joined.setdefault(source, set()).add(target)

    def bind(node: Mapping[str, Any], bound: set[int], out: list[int]) -> None:
        if "scan" in node:
            out.append(positions[str(node["scan"])])
            bound.add(out[-1])
            return
        sides = [node["left"], node["right"]]
        touching = [s for s in sides
                    if any(joined.get(positions[a], set()) & bound for a in _leaves(s))]
        first = touching[0] if touching else sides[0]
        bind(first, bound, out)
        bind(sides[1] if first is sides[0] else sides[0], bound, out)

    orders = []
    for alias, start in sorted(positions.items(), key=lambda item: item[1]):
        path = _path(tree, alias) or []
        bound, out = {start}, []
        for node in reversed(path):  # from the leaf's parent up to the root
            mine = set(_leaves(node["left"]))
            other = node["right"] if alias in mine else node["left"]
            bind(other, bound, out)
        orders.append(tuple(out))
    return tuple(orders)


def follow_plan(plan: IncrementalPlan, tree: Mapping[str, Any] | None) -> IncrementalPlan:
    """``plan`` with the join orders of the optimizer's ``tree`` (unchanged when the tree is
    not a plan of its relations, or would bind a relation before one it is joined to)."""
    from aspen.queries.incremental.expr import NotIncrementalError

    orders = plan_orders(plan, tree)
    if orders is None:
        return plan
    try:
        return plan.ordered(orders)
    except NotIncrementalError:
        return plan
