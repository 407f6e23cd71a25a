"""A route hop by hop: one row per link with its cost and the cost so far, so a route across
the whole network reads in full (a table, never one long cell).

>>> hop_table([("a", "b", 1.0), ("b", "c", 2.5)]).to_dict("records")
[{'step': 1, 'link': 'a → b', 'cost (ms)': 1.0, 'cumulative cost (ms)': 1.0}, \
{'step': 2, 'link': 'b → c', 'cost (ms)': 2.5, 'cumulative cost (ms)': 3.5}]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

__all__ = ["HOP_COLUMNS", "hop_table", "hops_of"]

#: The columns of a hop table.
HOP_COLUMNS = ["step", "link", "cost (ms)", "cumulative cost (ms)"]


def hops_of(route: Sequence[str], costs: Mapping[tuple[str, str], float]
            ) -> list[tuple[str, str, float]]:
    """The hops ``(src, dst, cost)`` of a route given as its nodes in order; a link without a
    known cost gets NaN.

    >>> hops_of(["a", "b", "c"], {("a", "b"): 1.0})
    [('a', 'b', 1.0), ('b', 'c', nan)]
    """
    return [(str(a), str(b), float(costs.get((a, b), math.nan)))
            for a, b in zip(route, route[1:], strict=False)]


def hop_table(hops: Iterable[tuple[str, str, float]]) -> pd.DataFrame:
    """One row per hop: its ``step`` (from 1), the ``link`` as ``a → b`` (plain text: a
    dataframe cell shows it as it is), its cost and the cost of the route up to and including
    it, in ms. A hop without a known cost makes the cumulative cost unknown from there on.

    >>> hop_table([("a", "b", float("nan")), ("b", "c", 2.0)])["cumulative cost (ms)"].tolist()
    [nan, nan]
    """
    rows, total = [], 0.0
    for step, (src, dst, cost) in enumerate(hops, start=1):
        total += float(cost)
        rows.append({"step": step, "link": f"{src} → {dst}", "cost (ms)": float(cost),
                     "cumulative cost (ms)": total})
    return pd.DataFrame(rows, columns=HOP_COLUMNS).astype(
        {"step": "int64", "cost (ms)": "float64", "cumulative cost (ms)": "float64"})
