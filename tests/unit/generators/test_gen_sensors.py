"""Sensor grids: shape, ids, seeds, jitter, neighbourhoods."""

from __future__ import annotations

import math

import pytest

from aspen.errors import ConfigError
from aspen.generators.sensors import sensor_grid


def test_default_grid_is_ten_by_ten_over_a_hundred_metres() -> None:
    grid = sensor_grid()
    assert [s.id for s in grid.sensors] == [f"s{i}" for i in range(100)]
    xs = sorted({s.x for s in grid.sensors})
    ys = sorted({s.y for s in grid.sensors})
    assert xs == ys == [5.0 + 10.0 * i for i in range(10)]
    assert grid.sensors[12] == ("s12", 25.0, 15.0)  # row-major: row 1, column 2
    assert grid.k == 20.0 and grid.width == grid.height == 100.0


def test_five_distinct_spread_out_seed_regions() -> None:
    grid = sensor_grid()
    assert [s.region for s in grid.seeds] == ["r1", "r2", "r3", "r4", "r5"]
    ids = [s.id for s in grid.seeds]
    assert len(set(ids)) == 5
    where = {s.id: (s.x, s.y) for s in grid.sensors}
    closest = min(math.dist(where[a], where[b]) for a in ids for b in ids if a != b)
    assert closest >= 40.0  # far apart: no two seeds start in the same region
    random_seeds = sensor_grid(seed_placement="random", seed=3).seeds
    assert len({s.id for s in random_seeds}) == 5
    assert random_seeds == sensor_grid(seed_placement="random", seed=3).seeds
    assert random_seeds != sensor_grid(seed_placement="random", seed=4).seeds


def test_neighbourhoods_use_strict_distance_below_k() -> None:
    grid = sensor_grid()
    assert len(grid.neighbours("s55")) == 8  # 4 at 10 m, 4 at 14.1 m; 20 m is not < k
    assert sorted(grid.neighbours("s0")) == ["s1", "s10", "s11"]
    wide = sensor_grid(k=20.5)
    assert len(wide.neighbours("s55")) == 12


def test_spacing_and_jitter() -> None:
    assert len(sensor_grid(spacing=5.0).sensors) == 400
    assert len(sensor_grid(width=50.0, height=20.0, spacing=10.0).sensors) == 10
    plain = sensor_grid()
    jittered = sensor_grid(jitter=3.0, seed=1)
    moved = [
        math.dist((a.x, a.y), (b.x, b.y))
        for a, b in zip(plain.sensors, jittered.sensors, strict=True)
    ]
    assert any(d > 0 for d in moved) and all(d <= 3.0 * math.sqrt(2) + 1e-9 for d in moved)
    assert all(0 <= s.x <= 100 and 0 <= s.y <= 100 for s in jittered.sensors)
    assert sensor_grid(jitter=3.0, seed=1) == jittered
    assert sensor_grid(jitter=3.0, seed=2) != jittered


@pytest.mark.parametrize(
    "kwargs",
    [
        {"spacing": 0},
        {"spacing": 500.0},
        {"jitter": -1.0},
        {"regions": 101},
        {"k": math.inf},
        {"seed_placement": "corners"},
        {"width": float("nan")},
    ],
)
def test_bad_grid_arguments(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        sensor_grid(**kwargs)
