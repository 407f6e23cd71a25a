"""The continuous queries ``aspen demo`` registers: questions an operator of the demo network
asks after every batch, each maintained incrementally (state + merge, in process) by the query
worker after the demo's maintained batch.

>>> sorted(DEMO_QUERIES)
['costliest_from', 'reach_per_router', 'triggered_sensors']
"""

from __future__ import annotations

from aspen.queries.registry import register
from aspen.settings import Settings

__all__ = ["DEMO_QUERIES", "register_demo_queries"]

#: Name → (SQL, what it answers).
DEMO_QUERIES: dict[str, tuple[str, str]] = {
    "reach_per_router": (
        "SELECT r.src AS router, COUNT(*) AS reachable FROM reachable r GROUP BY r.src",
        "how many routers each router reaches"),
    "costliest_from": (
        "SELECT m.src AS router, MAX(m.cost) AS worst_ms, AVG(m.cost) AS mean_ms "
        "FROM min_cost m GROUP BY m.src",
        "per router, its costliest and mean least-cost route (ms)"),
    "triggered_sensors": (
        "SELECT s.id AS sensor, s.x AS x, s.y AS y FROM sensor s JOIN triggered t ON s.id = t.id",
        "the triggered sensors and where they are"),
}


def register_demo_queries(settings: Settings) -> list[str]:
    """Register (or replace) every demo query in the lake; their names."""
    for name, (sql, _meaning) in DEMO_QUERIES.items():
        register(settings, name, sql, replace_existing=True)
    return list(DEMO_QUERIES)
