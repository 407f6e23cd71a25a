"""Repeated runs of one experiment: mean and 95 % confidence interval of every measured time.

A paper-size experiment is run ``n`` times (each in its own process); the first run's result is
the one the tables show, and :func:`summarize` adds, for every timing of the result (a numeric
leaf whose key ends in ``_s``, ``_ms`` or ``seconds``), the mean and the half-width of its 95 %
confidence interval (Student's t with n − 1 degrees of freedom). Counts (messages, tuples) are
deterministic and are checked to be equal across the runs instead.

>>> runs = [{"build_s": 1.0, "messages": 7}, {"build_s": 1.2, "messages": 7},
...         {"build_s": 1.1, "messages": 7}]
>>> s = summarize(runs)
>>> s["n"], round(s["timings"]["build_s"]["mean"], 3), round(s["timings"]["build_s"]["ci95"], 3)
(3, 1.1, 0.248)
>>> s["counts_equal"]
True
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["is_timing", "summarize", "t_quantile"]

# two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_quantile(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (normal beyond 30).

    >>> t_quantile(9)
    2.262
    """
    if df < 1:
        raise ValueError("a confidence interval needs at least two runs")
    return _T975[df - 1] if df <= len(_T975) else 1.96


def is_timing(path: str) -> bool:
    """Whether a result path names a measured time (not a count).

    >>> is_timing("schemes/dred/mean_ms"), is_timing("schemes/dred/del_messages")
    (True, False)
    """
    leaf = path.rsplit("/", 1)[-1]
    return leaf.endswith(("_s", "_ms", "seconds"))


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}/{key}" if path else str(key))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, float(value)


def summarize(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``{"n", "timings": {path: {mean, ci95, min, max}}, "counts_equal"}`` over the runs'
    results (lists inside results, such as per-deletion series, are left out)."""
    flat = [dict(_leaves(r)) for r in results]
    n = len(flat)
    common = set(flat[0]).intersection(*flat[1:]) if flat else set()
    timings: dict[str, dict[str, float]] = {}
    counts_equal = True
    for path in sorted(common):
        values = [f[path] for f in flat]
        if not is_timing(path):
            counts_equal = counts_equal and len(set(values)) == 1
            continue
        mean = statistics.fmean(values)
        half = (t_quantile(n - 1) * statistics.stdev(values) / math.sqrt(n)) if n > 1 else math.nan
        timings[path] = {"mean": mean, "ci95": half, "min": min(values), "max": max(values)}
    return {"n": n, "timings": timings, "counts_equal": counts_equal}
