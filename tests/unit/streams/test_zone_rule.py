"""The zone rule (Ariadne's running example): exact tests on tiny literal streams, and on random
streams the incremental zone state, cut into micro-batches and serialized between them, against
a from-scratch evaluation of every prefix."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.errors import ConfigError
from aspen.streams.zones import ZoneReading, ZoneRule, ZoneState, zone_of

S = 1_000_000


def readings(*rows: tuple[int, str, float, float]) -> list[ZoneReading]:
    return [ZoneReading(i, s, round(t * S), v) for i, s, t, v in rows]


def test_three_hot_sensors_within_the_span_trigger_with_their_windows_readings() -> None:
    rule = ZoneRule(count=2)
    step = ZoneState().add_all(rule, readings(
        (1, "a", 0, 95), (2, "a", 1, 95),          # a hot at 1 s
        (3, "b", 2, 99), (4, "b", 3, 99),          # b hot at 3 s: two sensors, not three
        (5, "c", 30, 99), (6, "c", 31, 99),        # c hot at 31 s: a and b are 28 s back
        (7, "d", 32, 91), (8, "d", 33, 93),        # d hot at 33 s
        (9, "e", 34, 97), (10, "e", 35, 97)))      # e: c, d, e within 10 s
    assert [(d.sensor, d.op, d.ids) for d in step.decisions] == [
        ("c", "insert", (5, 6, 7, 8, 9, 10)), ("d", "insert", (5, 6, 7, 8, 9, 10)),
        ("e", "insert", (5, 6, 7, 8, 9, 10))]


def test_a_sensor_whose_average_falls_back_is_untriggered_with_its_window() -> None:
    rule = ZoneRule(count=2, sensors=1)
    step = ZoneState().add_all(rule, readings((1, "a", 0, 95), (2, "a", 1, 95),
                                              (3, "a", 2, 80), (4, "a", 3, 70)))
    assert [(d.op, d.ids) for d in step.decisions] == [("insert", (1, 2)), ("delete", (2, 3))]


def test_late_readings_are_dropped() -> None:
    rule = ZoneRule(count=1, sensors=1, lateness_s=5)
    step = ZoneState().add_all(rule, readings((1, "a", 10, 50), (2, "b", 4, 99)))
    assert [(r.id, why) for r, why in step.dropped] == [(2, "late")]
    assert step.decisions == []


def test_zones_are_square_cells_of_the_field() -> None:
    rule = ZoneRule(zone_m=25)
    assert zone_of(rule, 0, 0) == zone_of(rule, 24.9, 24.9) == "z0_0"
    assert zone_of(rule, 25, 0) == "z1_0" and zone_of(rule, -1, 0) == "z-1_0"
    with pytest.raises(ConfigError):
        ZoneRule(zone_m=0)


def from_scratch(rule: ZoneRule, stream: list[ZoneReading]) -> list[tuple]:
    """Each reading's decisions recomputed from the whole prefix before it (no pruning)."""
    lateness, span = round(rule.lateness_s * S), round(rule.within_s * S)
    kept: list[ZoneReading] = []
    triggered: set[str] = set()
    decisions = []
    for reading in sorted(stream, key=lambda r: r.id):
        if kept and reading.ts_us < max(r.ts_us for r in kept) - lateness:
            continue
        kept.append(reading)
        own = [r for r in kept if r.sensor == reading.sensor][-rule.count:]
        if len(own) < rule.count:
            continue
        avg = sum(r.value for r in own) / rule.count
        if avg <= rule.threshold:
            if reading.sensor in triggered:
                triggered.discard(reading.sensor)
                decisions.append((reading.sensor, "delete", tuple(r.id for r in own)))
            continue
        latest: dict[str, tuple[int, ...]] = {}
        for index, r in enumerate(kept):  # every hot sample so far, recomputed
            window = [o for o in kept[:index + 1] if o.sensor == r.sensor][-rule.count:]
            if len(window) == rule.count and sum(o.value for o in window) / rule.count > \
                    rule.threshold and reading.ts_us - span <= r.ts_us <= reading.ts_us:
                latest[r.sensor] = tuple(o.id for o in window)
        if len(latest) >= rule.sensors:
            ids = tuple(sorted({i for window in latest.values() for i in window}))
            for sensor in sorted(latest):
                if sensor not in triggered:
                    triggered.add(sensor)
                    decisions.append((sensor, "insert", ids))
    return decisions


@st.composite
def streams(draw: st.DrawFn) -> list[ZoneReading]:
    size = draw(st.integers(0, 25))
    rows = []
    for number in range(1, size + 1):
        rows.append(ZoneReading(number, draw(st.sampled_from("abcd")),
                                draw(st.integers(0, 40)) * S,
                                draw(st.sampled_from((80.0, 89.0, 91.0, 99.0)))))
    return rows


@settings(max_examples=300, deadline=None)
@given(stream=streams(), cuts=st.lists(st.integers(0, 25), max_size=3),
       count=st.integers(1, 3), sensors=st.integers(1, 3),
       within=st.sampled_from((3.0, 10.0)), lateness=st.sampled_from((0.0, 5.0, 100.0)))
def test_incremental_micro_batches_equal_every_prefix_from_scratch(
        stream: list[ZoneReading], cuts: list[int], count: int, sensors: int, within: float,
        lateness: float) -> None:
    rule = ZoneRule(count=count, sensors=sensors, within_s=within, lateness_s=lateness)
    bounds = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
    text, decisions = ZoneState().to_json(), []
    for low, high in zip(bounds, bounds[1:], strict=False):
        state = ZoneState.from_json(text)
        step = state.add_all(rule, stream[low:high])
        decisions += [(d.sensor, d.op, d.ids) for d in step.decisions]
        text = state.to_json()
    assert decisions == from_scratch(rule, stream)
