"""Sensor grids for the region query (Liu et al. 2008, §7.1, workload 2).

Sensors sit on a regular grid over a ``width × height`` metre area (default 100 m × 100 m),
at cell centres ``spacing/2 + i·spacing`` (default spacing 10 m → 10 × 10 = 100 sensors), each
optionally moved by a uniform jitter of up to ``jitter`` metres per axis (clipped to the area).
Ids are ``s0``, ``s1``, … in row-major order (rows by ``y``, then ``x``). ``regions`` seed
regions ``r1`` … ``r5`` each get one seed sensor, placed far apart (farthest-point sampling
from the sensor nearest the centre) or at random. ``k`` (default 20 m) is the contiguity
distance the engine uses (``distance < k``); with the default spacing every inner sensor has
8 neighbours within ``k``.

>>> grid = sensor_grid()
>>> len(grid.sensors), [seed.region for seed in grid.seeds], grid.k
(100, ['r1', 'r2', 'r3', 'r4', 'r5'], 20.0)
>>> grid.sensors[0]
Sensor(id='s0', x=5.0, y=5.0)
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Literal, NamedTuple

from aspen.errors import ConfigError

__all__ = ["Sensor", "RegionSeed", "SensorGrid", "sensor_grid"]


class Sensor(NamedTuple):
    """``sensor(id, x, y)``: position in metres."""

    id: str
    x: float
    y: float


class RegionSeed(NamedTuple):
    """``region_seed(region, id)``: the sensor a region grows from."""

    region: str
    id: str


@dataclass(frozen=True)
class SensorGrid:
    """A generated sensor field and its region seeds."""

    sensors: tuple[Sensor, ...]
    seeds: tuple[RegionSeed, ...]
    width: float
    height: float
    spacing: float
    jitter: float
    k: float
    seed: int

    def neighbours(self, sensor_id: str) -> list[str]:
        """Sensors at distance ``< k`` from ``sensor_id`` (excluding itself).

        >>> sorted(sensor_grid().neighbours("s0"))
        ['s1', 's10', 's11']
        """
        by_id = {sensor.id: sensor for sensor in self.sensors}
        here = by_id[sensor_id]
        return [
            other.id
            for other in self.sensors
            if other.id != sensor_id and math.dist((here.x, here.y), (other.x, other.y)) < self.k
        ]


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ConfigError(f"{name} must be a positive number, got {value!r}")


def sensor_grid(
    width: float = 100.0,
    height: float = 100.0,
    spacing: float = 10.0,
    *,
    jitter: float = 0.0,
    regions: int = 5,
    k: float = 20.0,
    seed_placement: Literal["spread", "random"] = "spread",
    seed: int = 0,
) -> SensorGrid:
    """Generate a sensor grid with ``regions`` seed sensors; deterministic given ``seed``.

    >>> g = sensor_grid(spacing=20.0, jitter=1.0, regions=2, seed=4)
    >>> len(g.sensors), len(g.seeds)
    (25, 2)
    """
    for name, value in (("width", width), ("height", height), ("spacing", spacing), ("k", k)):
        _check_positive(name, value)
    if not (isinstance(jitter, int | float) and math.isfinite(jitter) and jitter >= 0):
        raise ConfigError(f"jitter must be a number ≥ 0, got {jitter!r}")
    columns, rows = int(width // spacing), int(height // spacing)
    if columns < 1 or rows < 1:
        raise ConfigError(f"spacing {spacing} m leaves no sensor in a {width} × {height} m area")
    if not isinstance(regions, int) or not 0 <= regions <= columns * rows:
        raise ConfigError(f"regions must be an integer in [0, {columns * rows}], got {regions!r}")
    if seed_placement not in ("spread", "random"):
        raise ConfigError(f"seed placement must be 'spread' or 'random', got {seed_placement!r}")
    rng = random.Random(seed)
    sensors: list[Sensor] = []
    for row in range(rows):
        for column in range(columns):
            x, y = spacing / 2 + column * spacing, spacing / 2 + row * spacing
            if jitter:
                x = min(max(x + rng.uniform(-jitter, jitter), 0.0), width)
                y = min(max(y + rng.uniform(-jitter, jitter), 0.0), height)
            sensors.append(Sensor(f"s{len(sensors)}", round(x, 3), round(y, 3)))
    if seed_placement == "random":
        chosen = rng.sample(range(len(sensors)), regions)
    else:
        chosen = _spread(sensors, regions, (width / 2, height / 2))
    seeds = tuple(RegionSeed(f"r{n + 1}", sensors[i].id) for n, i in enumerate(chosen))
    return SensorGrid(tuple(sensors), seeds, width, height, spacing, jitter, float(k), seed)


def _spread(sensors: list[Sensor], count: int, centre: tuple[float, float]) -> list[int]:
    """Farthest-point sampling from the sensor nearest ``centre``; ties go to the lower index."""
    if count == 0:
        return []
    points = [(s.x, s.y) for s in sensors]
    first = min(range(len(points)), key=lambda i: (math.dist(points[i], centre), i))
    chosen = [first]
    nearest = [math.dist(p, points[first]) for p in points]
    while len(chosen) < count:
        nxt = max(range(len(points)), key=lambda i: (nearest[i], -i))
        chosen.append(nxt)
        nearest = [min(d, math.dist(p, points[nxt])) for d, p in zip(nearest, points, strict=True)]
    return chosen
