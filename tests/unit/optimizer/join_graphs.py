"""Random join graphs, statistics and changes for the optimizer tests (hypothesis strategies),
and the checks they share.

A graph has relations ``r0…r{n-1}`` over tables ``t0…`` in one of four shapes (chain, star,
cycle, clique). Each edge joins either private columns (``r0.c0_1 = r1.c0_1``) or the shared
column ``k`` (``r0.k = r1.k``), so some key classes span several joins and sort-merge orders can
be reused; some relations carry a filter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from hypothesis import strategies as st

from aspen.optimizer.cost import DEFAULT_PARAMS, JOIN_METHODS
from aspen.optimizer.query import Expr, Query
from aspen.optimizer.stats import Stats

__all__ = ["SHAPES", "assert_close", "changes", "edges", "graph", "join_graphs",
           "method_subsets", "plan_count", "stats_for"]

SHAPES = ("chain", "star", "cycle", "clique")


def edges(shape: str, n: int) -> list[tuple[int, int]]:
    """The edges of an ``n``-relation graph of ``shape`` (a cycle of 2 is a chain)."""
    if shape == "chain":
        return [(i, i + 1) for i in range(n - 1)]
    if shape == "star":
        return [(0, i) for i in range(1, n)]
    if shape == "cycle":
        return [(i, i + 1) for i in range(n - 1)] + ([(0, n - 1)] if n > 2 else [])
    if shape == "clique":
        return list(combinations(range(n), 2))
    raise ValueError(shape)


def graph(shape: str, n: int, shared: Sequence[bool] = (),
          filtered: Sequence[int] = ()) -> Query:
    """The query of one shape; ``shared[e]`` joins edge ``e`` on the shared column ``k``."""
    joins = []
    for e, (i, j) in enumerate(edges(shape, n)):
        column = "k" if e < len(shared) and shared[e] else f"c{i}_{j}"
        joins.append(f"r{i}.{column} = r{j}.{column}")
    return Query.from_json({
        "name": f"{shape}{n}", "relations": {f"r{i}": f"t{i}" for i in range(n)},
        "joins": joins,
        "filters": [{"relation": f"r{i}", "predicate": "x < 5"} for i in filtered]})


@st.composite
def join_graphs(draw: st.DrawFn, min_size: int = 2, max_size: int = 6,
                shapes: Sequence[str] = SHAPES, max_clique: int = 5) -> Query:
    """A random query: a shape, 2–6 relations (cliques at most ``max_clique``), shared or
    private join columns, some filters."""
    shape = draw(st.sampled_from(shapes))
    top = min(max_size, max_clique) if shape == "clique" else max_size
    n = draw(st.integers(min_size, max(min_size, top)))
    count = len(edges(shape, n))
    shared = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    filtered = draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True))
    return graph(shape, n, shared, filtered)


def method_subsets() -> st.SearchStrategy[tuple[str, ...]]:
    """A non-empty subset of the join methods, in their canonical order."""
    return st.lists(st.sampled_from(JOIN_METHODS), min_size=1, max_size=3, unique=True).map(
        lambda ms: tuple(m for m in JOIN_METHODS if m in ms))


def _magnitude(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(math.log10(low), math.log10(high)).map(lambda e: 10.0 ** e)


@st.composite
def stats_for(draw: st.DrawFn, query: Query) -> Stats:
    """Random statistics for ``query``: rows 1–10^7, widths, some ndvs and selectivities,
    some cost parameters moved (a low broadcast limit makes the penalty bite)."""
    tables: dict[str, Any] = {}
    for alias in query.aliases:
        table = query.relations[alias]
        rows = round(draw(_magnitude(1, 1e7)))
        tables[table] = {"rows": rows, "width": draw(st.integers(1, 400)), "columns": {}}
    for pred in query.joins:
        for column in (pred.left, pred.right):
            alias, name = column.split(".", 1)
            table = tables[query.relations[alias]]
            if draw(st.booleans()):
                table["columns"][name] = {"ndv": max(1, round(table["rows"] * draw(
                    st.floats(0.001, 1.0))))}
    selectivity = {}
    for pred in query.joins:
        if draw(st.integers(0, 3)) == 0:
            selectivity[pred.id] = draw(_magnitude(1e-7, 1.0))
    for flt in query.filters:
        if draw(st.booleans()):
            selectivity[flt.id] = draw(_magnitude(1e-4, 1.0))
    params = {}
    for name in draw(st.lists(st.sampled_from(sorted(DEFAULT_PARAMS)), max_size=3, unique=True)):
        params[name] = DEFAULT_PARAMS[name] * draw(_magnitude(0.1, 10.0))
    if draw(st.booleans()):
        params["broadcast_limit"] = draw(_magnitude(1e2, 1e9))
    return Stats.from_json({"tables": tables, "selectivity": selectivity, "params": params})


@st.composite
def changes(draw: st.DrawFn, query: Query, stats: Stats) -> dict[str, dict[str, float]]:
    """One batch of 1–3 changes (a C.jsonl line): rows, widths, ndvs or selectivities scaled
    by 1/8–8, or a cost parameter moved."""
    out: dict[str, dict[str, float]] = {}
    factor = _magnitude(1 / 8, 8)
    for kind in draw(st.lists(st.sampled_from(("rows", "width", "ndv", "selectivity",
                                               "params")), min_size=1, max_size=3)):
        if kind in ("rows", "width"):
            table = draw(st.sampled_from(sorted(set(query.relations.values()))))
            now = stats.rows(table) if kind == "rows" else stats.width(table)
            out.setdefault(kind, {})[table] = max(1.0, round(now * draw(factor)))
        elif kind == "ndv":
            pred = draw(st.sampled_from(query.joins))
            alias, column = pred.left.split(".", 1)
            table = query.relations[alias]
            out.setdefault(kind, {})[f"{table}.{column}"] = max(
                1.0, round(stats.ndv(table, column) * draw(factor)))
        elif kind == "selectivity":
            names = [p.id for p in query.joins] + [f.id for f in query.filters]
            out.setdefault(kind, {})[draw(st.sampled_from(names))] = draw(
                _magnitude(1e-7, 1.0))
        else:
            name = draw(st.sampled_from(sorted(DEFAULT_PARAMS)))
            out.setdefault(kind, {})[name] = stats.param(name, DEFAULT_PARAMS[name]) * draw(
                factor)
    return out


def plan_count(query: Query, methods: Sequence[str] = JOIN_METHODS,
               left_linear: bool = False) -> int:
    """How many plan trees :func:`aspen.optimizer.brute.plans` generates (by recursion)."""
    memo: dict[Expr, int] = {}

    def count(expr: Expr) -> int:
        if len(expr) == 1:
            return 1
        if expr not in memo:
            total = 0
            members = sorted(expr)
            for size in range(1, len(members)):
                for chosen in combinations(members, size):
                    left = frozenset(chosen)
                    right = expr - left
                    if left_linear and len(right) != 1:
                        continue
                    if not (query.connected(left) and query.connected(right)
                            and query.joins_between(left, right)):
                        continue
                    ways = sum(len(query.keys_between(left, right)) if m == "sort_merge" else 1
                               for m in methods)
                    total += count(left) * count(right) * ways
            memo[expr] = total
        return memo[expr]

    return count(query.root)


def assert_close(actual: float, expected: float, what: str = "cost") -> None:
    """Equal costs up to float summation order."""
    assert math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12), (
        f"{what}: {actual!r} != {expected!r}")
