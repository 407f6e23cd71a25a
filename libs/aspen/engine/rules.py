"""Named tuple functions that plans refer to (plans stay data: they hold names, not code).

Every rule is a factory: ``rule(name, **params)`` returns the callable. Kinds:

* maps (base case): a base tuple → a view tuple, or None to drop it;
* keys and probes of joins (``col:i`` is the i-th column);
* combines of joins: ``combine(left, right)`` → output tuple or None (a filter).

>>> rule("link_to_path")(("a", "b", 2.0))
('a', 'b', ('a', 'b'), 2.0, 1)
>>> rule("path_step")(("b", "c", ("b", "c"), 1.0, 1), ("a", "b", 2.0))
('a', 'c', ('a', 'b', 'c'), 3.0, 2)
>>> rule("path_step")(("b", "a", ("b", "a"), 1.0, 1), ("a", "b", 2.0)) is None
True
>>> rule("col:1")(("x", "y"))
'y'
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from aspen.errors import EngineError

__all__ = ["RULES", "rule", "distance"]


def distance(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Euclidean distance (``math.dist``) used by the region query's ``distance < k``."""
    return math.dist(a, b)


def _link_to_reachable() -> Callable[[tuple], tuple]:
    return lambda t: (t[0], t[1])


def _link_to_path() -> Callable[[tuple], tuple]:
    return lambda t: (t[0], t[1], (t[0], t[1]), t[2], 1)


def _reachable_step() -> Callable[[tuple, tuple], tuple]:
    # left = reachable(z, y), right = link(x, z, c)  →  reachable(x, y)
    return lambda r, link: (link[0], r[1])


def _path_step() -> Callable[[tuple, tuple], tuple | None]:
    # left = path(z, y, p1, c2, l1), right = link(x, z, c1) → path(x, y, [x]+p1, c1+c2, l1+1)
    def combine(p: tuple, link: tuple) -> tuple | None:
        x = link[0]
        if x in p[2]:
            return None  # simple paths only: x not in p1
        return (x, p[1], (x, *p[2]), link[2] + p[3], p[4] + 1)

    return combine


def _region_step() -> Callable[[tuple, tuple], tuple]:
    # left = active_region(r, x), right = neighbor(x, y) → active_region(r, y)
    return lambda ar, nb: (ar[0], nb[1])


def _sensor_triggered() -> Callable[[tuple, tuple], tuple]:
    # left = sensor(id, x, y), right = triggered(id) → triggered_sensor(id, x, y)
    return lambda s, t: s


def _seed_join() -> Callable[[tuple, tuple], tuple]:
    # left = region_seed(region, id), right = triggered_sensor(id, x, y) → active_region(region, id)
    return lambda seed, ts: (seed[0], seed[1])


def _neighbors(k: float) -> Callable[[tuple, tuple], tuple | None]:
    # left = sensor(x, px, py), right = triggered_sensor(y, qx, qy) → neighbor(x, y) if dist < k
    def combine(s: tuple, ts: tuple) -> tuple | None:
        if s[0] == ts[0] or distance((s[1], s[2]), (ts[1], ts[2])) >= k:
            return None
        return (s[0], ts[0])

    return combine


def _cell(k: float) -> Callable[[tuple], tuple[int, int]]:
    return lambda t: (math.floor(t[1] / k), math.floor(t[2] / k))


def _cells_around(k: float) -> Callable[[tuple], list[tuple[int, int]]]:
    def probe(t: tuple) -> list[tuple[int, int]]:
        cx, cy = math.floor(t[1] / k), math.floor(t[2] / k)
        return [(cx + dx, cy + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)]

    return probe


RULES: dict[str, Callable[..., Callable[..., Any]]] = {
    "link_to_reachable": _link_to_reachable,
    "link_to_path": _link_to_path,
    "reachable_step": _reachable_step,
    "path_step": _path_step,
    "region_step": _region_step,
    "sensor_triggered": _sensor_triggered,
    "seed_join": _seed_join,
    "neighbors": _neighbors,
    "cell": _cell,
    "cells_around": _cells_around,
}


def rule(name: str, **params: Any) -> Callable[..., Any]:
    """The callable named ``name`` (``col:i`` selects column i)."""
    if name.startswith("col:"):
        index = int(name[4:])
        return lambda t: t[index]
    try:
        factory = RULES[name]
    except KeyError:
        raise EngineError(f"unknown plan rule {name!r}; known: {sorted(RULES)}") from None
    return factory(**params)
