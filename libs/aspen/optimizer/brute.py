"""Brute force: every plan tree of a query, each costed alone with :func:`cost_of` — the oracle.

:func:`plans` generates every plan JSON tree (:mod:`aspen.optimizer.cost`) of the space: every
bushy join tree without cross products (both orders of each join, as the methods are
asymmetric), every join method at every join, and every key class a sort-merge join could sort
on. It shares nothing with the and-or graph (no memo, no split), so it checks the optimizers'
search, not only their agreement. The count grows like ``n!·Catalan(n−1)·methods^(n−1)``: it
is meant for at most 6 relations and few methods.

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> len(list(plans(q)))
6
>>> s = Stats.from_json({"tables": {"t": {"rows": 1e6}, "u": {"rows": 10}}})
>>> best_by_brute_force(q, s)[1]
{'join': 'broadcast_hash', 'left': {'scan': 'a'}, 'right': {'scan': 'b'}}
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from aspen.errors import ConfigError
from aspen.optimizer.cost import JOIN_METHODS, cost_of, key_label
from aspen.optimizer.query import Expr, Query
from aspen.optimizer.stats import Stats

__all__ = ["best_by_brute_force", "plans"]


def _trees(query: Query, expr: Expr, methods: Sequence[str],
           left_linear: bool) -> Iterator[dict[str, Any]]:
    if len(expr) == 1:
        yield {"scan": next(iter(expr))}
        return
    for left, right in query.splits(expr, left_linear):
        keys = [key_label(k) for k in query.keys_between(left, right)]
        for left_plan in _trees(query, left, methods, left_linear):
            for right_plan in _trees(query, right, methods, left_linear):
                for method in methods:
                    if method != "sort_merge":
                        yield {"join": method, "left": left_plan, "right": right_plan}
                        continue
                    for key in keys:
                        yield {"join": method, "left": left_plan, "right": right_plan,
                               "key": key}


def plans(query: Query, methods: Sequence[str] = JOIN_METHODS,
          left_linear: bool = False) -> Iterator[dict[str, Any]]:
    """Every plan tree of ``query`` with joins by ``methods`` (left-deep ones only when
    ``left_linear``), in a fixed order. Trees share sub-dicts: do not mutate them."""
    unknown = set(methods) - set(JOIN_METHODS)
    if unknown or not methods:
        raise ConfigError(f"unknown join method(s) {sorted(unknown)}; "
                          f"known: {', '.join(JOIN_METHODS)}")
    return _trees(query, query.root, tuple(methods), left_linear)


def best_by_brute_force(query: Query, stats: Stats, methods: Sequence[str] = JOIN_METHODS,
                        left_linear: bool = False) -> tuple[float, dict[str, Any]]:
    """The cheapest plan tree by costing every one (ties: the first generated)."""
    best_cost, best = math.inf, None
    for plan in plans(query, methods, left_linear):
        cost = cost_of(plan, query, stats)
        if cost < best_cost:
            best_cost, best = cost, plan
    assert best is not None, "a connected query has a plan"
    return best_cost, best
