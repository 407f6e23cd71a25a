"""Choosing a query's plan with the optimizer, and reading a plan tree node by node.

A plan is the optimizer's JSON tree (:mod:`aspen.optimizer.cost`): ``{"scan": alias}`` or
``{"join": method, "left": …, "right": …}``, the right child the build (broadcast) side. Its
nodes are named by their path from the root (``root``, ``root.L``, ``root.L.R`` …), the names
``query_runs`` records them under.

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> s = Stats.from_json({"tables": {"t": {"rows": 1e6}, "u": {"rows": 10}}})
>>> cost, plan = choose_plan(q, s)
>>> [(n.path, n.operator, sorted(n.aliases), n.estimated_rows) for n in plan_nodes(plan, q, s)]
[('root.L', 'scan', ['a'], 1000000.0), ('root.R', 'scan', ['b'], 10.0), \
('root', 'broadcast_hash', ['a', 'b'], 10.0)]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from aspen.optimizer.cost import JOIN_METHODS, card, cost_of
from aspen.optimizer.query import Query
from aspen.optimizer.stats import Stats

__all__ = ["DEFAULT_METHOD", "PlanNode", "choose_plan", "plan_lines", "plan_nodes"]

#: The optimizer method that plans queries unless told otherwise (the reference: it costs
#: every plan, which the few relations of a query afford).
DEFAULT_METHOD = "exhaustive"


@dataclass(frozen=True)
class PlanNode:
    """One node of a plan: its path, operator (``scan`` or a join method), relations, the
    estimated rows of its output and, for a join, the relations of its two inputs."""

    path: str
    operator: str
    aliases: frozenset[str]
    estimated_rows: float
    left: frozenset[str] | None = None
    right: frozenset[str] | None = None


def choose_plan(query: Query, stats: Stats, method: str | None = None
                ) -> tuple[float, dict[str, Any]]:
    """The best plan of ``query`` under ``stats`` and its cost, by the optimizer ``method``
    (:data:`aspen.optimizer.methods.METHODS`; default :data:`DEFAULT_METHOD`, which costs the
    whole search space)."""
    from aspen.optimizer.methods import make_optimizer
    from aspen.optimizer.space import SearchSpace

    result = make_optimizer(method or DEFAULT_METHOD, SearchSpace(query)).optimize(stats)
    return result.cost, result.plan


def _walk(plan: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if "join" in plan:
        yield from _walk(plan["left"], f"{path}.L")
        yield from _walk(plan["right"], f"{path}.R")
    yield path, plan


def _aliases(plan: Mapping[str, Any]) -> frozenset[str]:
    if "scan" in plan:
        return frozenset({str(plan["scan"])})
    return _aliases(plan["left"]) | _aliases(plan["right"])


def plan_nodes(plan: Mapping[str, Any], query: Query, stats: Stats) -> list[PlanNode]:
    """Every node of ``plan``, children before parents (left before right), with its
    estimated output rows; :class:`~aspen.errors.ConfigError` for a plan not of ``query``."""
    cost_of(plan, query, stats)  # validates the tree against the query
    out = []
    for path, node in _walk(plan, "root"):
        aliases = _aliases(node)
        rows = card(query, stats, aliases)
        if "scan" in node:
            out.append(PlanNode(path, "scan", aliases, rows))
        else:
            method = str(node["join"])
            assert method in JOIN_METHODS
            out.append(PlanNode(path, method, aliases, rows, _aliases(node["left"]),
                                _aliases(node["right"])))
    return out


def plan_lines(plan: Mapping[str, Any], query: Query, stats: Stats) -> list[str]:
    """The plan as a tree, one operator a line, with its estimated output rows (the layout of
    :func:`aspen.optimizer.render.plan_lines`; the right input of a hash join is its build
    side).

    >>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
    >>> s = Stats.from_json({"tables": {"t": {"rows": 1e6}, "u": {"rows": 10}}})
    >>> print("\\n".join(plan_lines(choose_plan(q, s)[1], q, s)))
    broadcast_hash  ~10 rows
    ├─ scan a (t)  ~1e+06 rows
    └─ scan b (u)  ~10 rows
    """
    rows = card(query, stats, _aliases(plan))
    if "scan" in plan:
        alias = str(plan["scan"])
        return [f"scan {alias} ({query.relations[alias]})  ~{rows:.4g} rows"]
    key = f" on {plan['key']}" if "key" in plan else ""
    lines = [f"{plan['join']}{key}  ~{rows:.4g} rows"]
    for side, (first, rest) in (("left", ("├─ ", "│  ")), ("right", ("└─ ", "   "))):
        sub = plan_lines(plan[side], query, stats)
        lines.append(first + sub[0])
        lines.extend(rest + line for line in sub[1:])
    return lines
