"""Sensor readings for a sensor field: hot sensors read above the default rule's threshold.

A reading is ``{"op": "insert", "relation": "reading", "sensor": ID, "ts": ISO, "value": V}``.
Every sensor reads every ``every_s`` seconds (with a little jitter in time) for ``minutes``
minutes; a hot sensor's values lie around :data:`HOT_LEVEL`, the others' around
:data:`COOL_LEVEL`, so the default rule (the average over 60-second windows above 90.0,
:class:`aspen.streams.rules.TriggerRule`) triggers exactly the hot ones. A last reading of each
sensor, ``lateness_s`` after the others, closes its windows.

>>> from aspen.generators.sensors import sensor_grid
>>> grid = sensor_grid(seed=1)
>>> lines = reading_stream(grid, {grid.sensors[0].id}, start=0.0, minutes=2, every_s=30)
>>> len(lines), lines[0]["relation"], sorted(lines[0])
(500, 'reading', ['op', 'relation', 'sensor', 'ts', 'value'])
"""

from __future__ import annotations

import random
from collections.abc import Collection

from aspen.generators.records import iso_time
from aspen.generators.sensors import SensorGrid

__all__ = ["COOL_LEVEL", "DEMO_NETWORK", "HOT_LEVEL", "reading_stream"]

#: The level a hot sensor reads around, and a cool one (the default rule's threshold is 90).
HOT_LEVEL = 96.0
COOL_LEVEL = 70.0
#: How far a reading strays from its level (uniform), well inside the margin to 90.
SPREAD = 4.0

#: The demo's stream network (:mod:`aspen.streams.networks`): per sensor, its spikes (readings
#: above 95) counted over one-minute windows sliding by 30 s, with the highest one.
DEMO_NETWORK: dict[str, object] = {
    "name": "demo_spikes", "lateness_s": 30.0,
    "query": {"aggregate": {"select": {"stream": "readings"}, "where": "value > 95",
                            "name": "spike"},
              "window": {"seconds": 60, "slide": 30},
              "functions": ["count(value) AS spikes", "max(value) AS peak"],
              "name": "spikes_per_minute"},
}


def reading_stream(grid: SensorGrid, hot: Collection[str], *, start: float, minutes: float = 4,
                   every_s: float = 5.0, lateness_s: float = 30.0,
                   seed: int = 0) -> list[dict[str, object]]:
    """Readings of every sensor of ``grid`` in time order from ``start`` (epoch seconds)."""
    rng = random.Random(seed)
    steps = int(minutes * 60 / every_s)
    lines: list[tuple[float, str, float]] = []
    for step in range(steps):
        for sensor in grid.sensors:
            level = HOT_LEVEL if sensor.id in hot else COOL_LEVEL
            ts = start + step * every_s + rng.uniform(0, every_s / 2)
            lines.append((ts, sensor.id, round(level + rng.uniform(-SPREAD, SPREAD), 2)))
    closing = start + steps * every_s + lateness_s + 60.0
    lines += [(closing, sensor.id, COOL_LEVEL) for sensor in grid.sensors]
    lines.sort()
    return [{"op": "insert", "relation": "reading", "sensor": sensor, "ts": iso_time(ts),
             "value": value} for ts, sensor, value in lines]
