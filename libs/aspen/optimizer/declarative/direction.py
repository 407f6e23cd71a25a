"""Which way a batch of statistic changes moves the local costs: up, down, either, or not at all.

Under :mod:`aspen.optimizer.cost`, every local cost is a non-decreasing function of a few
coordinates: each relation's ``rows``, ``width`` and filter selectivity, each join predicate's
effective selectivity (the statistic, else ``1/max(ndv)``), and each cost parameter — except
``broadcast_limit``, which it does not increase while ``broadcast_penalty`` ≥ 1. (Cardinalities
are products of these coordinates; the formulas add non-negative multiples of them.) So when
every coordinate a batch moves goes the same way, so does every plan's cost, and so does every
OR node's best cost.

The dataflow uses this for the OR nodes it pruned and no longer maintains: after an ``up`` (or
``none``) batch, a lower bound known before the change is still a lower bound; after ``down``
or ``mixed`` it falls back to the structural floor (:mod:`.floors`).

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> s = Stats.from_json({"tables": {"t": {"rows": 10, "columns": {"k": {"ndv": 10}}}}})
>>> space = SearchSpace(q)
>>> change_direction(space, s, s.changed({"rows": {"t": 20}})[0])
'up'
>>> change_direction(space, s, s.changed({"params": {"broadcast_limit": 1e9}})[0])
'down'
>>> change_direction(space, s, s.changed({"rows": {"t": 20, "u": 1}})[0])
'mixed'
"""

from __future__ import annotations

from collections.abc import Iterator

from aspen.optimizer import cost as costs
from aspen.optimizer.space import SearchSpace
from aspen.optimizer.stats import Stats

__all__ = ["DIRECTIONS", "change_direction"]

#: What :func:`change_direction` returns.
DIRECTIONS: tuple[str, ...] = ("none", "up", "down", "mixed")

# parameters every local cost is non-decreasing in (broadcast_limit is handled apart)
_INCREASING = tuple(name for name in costs.DEFAULT_PARAMS if name != "broadcast_limit")


def _coordinates(space: SearchSpace, stats: Stats) -> Iterator[tuple[str, float, int]]:
    """(name, value, sign): the local costs move with ``sign`` × the value."""
    query = space.query
    for alias in query.aliases:
        table = query.relations[alias]
        yield f"rows {alias}", stats.rows(table), 1
        yield f"width {alias}", stats.width(table), 1
        yield f"filter {alias}", costs.filter_selectivity(query, stats, alias), 1
    for pred in query.joins:
        yield f"join {pred.id}", costs.join_selectivity(query, stats, pred), 1
    for name in _INCREASING:
        yield f"param {name}", stats.param(name, costs.DEFAULT_PARAMS[name]), 1
    penalty = stats.param("broadcast_penalty", costs.DEFAULT_PARAMS["broadcast_penalty"])
    limit = stats.param("broadcast_limit", costs.DEFAULT_PARAMS["broadcast_limit"])
    # a higher limit spares the penalty, which lowers costs only while the penalty is ≥ 1
    yield "param broadcast_limit", limit, -1 if penalty >= 1 else 1


def change_direction(space: SearchSpace, old: Stats, new: Stats) -> str:
    """``up`` if no local cost of ``space`` can decrease from ``old`` to ``new``, ``down`` if
    none can increase, ``none`` if none changes, else ``mixed``."""
    # the parameters move in this order: the penalty (costs rise with it) before the limit, so
    # the limit's effect is the one at the new penalty
    before = {name: value for name, value, _sign in _coordinates(space, old)}
    moves: set[int] = set()
    for name, value, sign in _coordinates(space, new):
        if value != before[name]:
            moves.add(sign if value > before[name] else -sign)
    if not moves:
        return "none"
    if len(moves) > 1:
        return "mixed"
    return "up" if moves == {1} else "down"
