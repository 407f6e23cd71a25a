"""The incremental per-sensor windows the readings stream runs (aspen.streams.windows) against
the from-scratch reference algebra (aspen.streams.algebra) and Ariadne's declarative definition
(Def. 2, by brute force in aspen.streams.oracle), on random streams of several sensors: the same
windows, aggregates and readings' ids; and for tumbling windows those ids are Def. 2's one
minimal provenance set. (For sliding windows whose readings fall in a neighbouring window too,
Def. 2 has no set at all — any subset forming the window forms the other one — and Aspen keeps
the window's readings; the algebra's tests pin that down.)"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.streams import algebra
from aspen.streams.oracle import provenance_sets
from aspen.streams.windows import KeyWindows, Reading, WindowSpec


@st.composite
def streams(draw: st.DrawFn, max_size: int = 24) -> list[algebra.Reading]:
    """Readings of up to three sensors, ids ascending, each sensor's times ascending (so no
    reading is late: the algebra has no lateness)."""
    size = draw(st.integers(0, max_size))
    sensors = draw(st.lists(st.sampled_from(("a", "b", "c")), min_size=size, max_size=size))
    gaps = draw(st.lists(st.integers(0, 7), min_size=size, max_size=size))
    values = draw(st.lists(st.integers(0, 100), min_size=size, max_size=size))
    clock: dict[str, int] = defaultdict(int)
    out = []
    for number, (sensor, gap, value) in enumerate(zip(sensors, gaps, values, strict=True), 1):
        clock[sensor] += gap + 1  # strictly increasing: no duplicates either
        out.append(algebra.Reading(number, sensor, clock[sensor], value))
    return out


def incremental(spec: WindowSpec, stream: list[algebra.Reading]) -> dict:
    """Every window of every sensor from KeyWindows, flushed at the end of the stream."""
    per_key: dict[str, KeyWindows] = defaultdict(KeyWindows)
    closed = []
    for r in stream:
        step = per_key[r.sensor].add(spec, Reading(r.id, int(r.ts), float(r.value)))
        assert not step.dropped
        closed += [(r.sensor, w) for w in step.closed]
    for sensor, windows in per_key.items():  # the finite stream is over: a reading far
        # ahead closes every window still open (its own stays open and is not reported)
        ahead = (windows.max_ts_us or 0) + 2 * spec.size_us + spec.lateness_us
        step = windows.add(spec, Reading(10**9, ahead, 0.0))
        closed += [(sensor, w) for w in step.closed]
    return {(sensor, w.start_us): (w.count, w.total, w.low, w.high, w.ids)
            for sensor, w in closed}


def reference(size: int, slide: int, stream: list[algebra.Reading]) -> dict:
    network = algebra.Aggregate(
        algebra.Stream("r"), algebra.TimeWindow(size, slide),
        (("count", "value"), ("sum", "value"), ("min", "value"), ("max", "value")),
        key="sensor")
    return {(row["sensor"], row["start"]): (row["count_value"], float(row["sum_value"]),
                                            float(row["min_value"]), float(row["max_value"]),
                                            tuple(sorted(row.prov["r"])))
            for row in algebra.evaluate(network, {"r": stream})}


@settings(max_examples=400, deadline=None)
@given(stream=streams(), size=st.sampled_from((5, 10)), slides=st.sampled_from((1, 2)))
def test_incremental_windows_equal_the_reference_algebra(
        stream: list[algebra.Reading], size: int, slides: int) -> None:
    slide = size // slides  # tumbling, or sliding by half a window
    spec = WindowSpec(size, slide, lateness_us=0)
    assert incremental(spec, stream) == reference(size, slide, stream)


@settings(max_examples=150, deadline=None)
@given(stream=streams(max_size=8), size=st.sampled_from((3, 5, 10)))
def test_a_tumbling_window_keeps_def2_s_minimal_provenance(
        stream: list[algebra.Reading], size: int) -> None:
    network = algebra.Aggregate(algebra.Stream("r"), algebra.TimeWindow(size, size),
                                (("avg", "value"),), key="sensor")
    minimal = provenance_sets(network, {"r": stream})
    ours = incremental(WindowSpec(size, size), stream)
    for row in algebra.evaluate(network, {"r": stream}):
        sets = minimal[row.id]
        assert len(sets) == 1, (row.id, sets)  # unique, so "Def. 2 wins" is well defined
        assert ours[(row["sensor"], row["start"])][-1] == tuple(sorted(sets[0]["r"]))


def test_the_window_fidelity_counterexample_holds_for_the_incremental_windows() -> None:
    """Ariadne's worked example on a time window: four readings of 5 in windows of two time
    units; the second window's provenance is its two readings, not an earlier pair."""
    stream = [algebra.Reading(i, "a", i - 1, 5) for i in (1, 2, 3, 4)]
    got = incremental(WindowSpec(2, 2), stream)
    assert got[("a", 2)] == (2, 10.0, 5.0, 5.0, (3, 4))
    assert reference(2, 2, stream)[("a", 2)] == got[("a", 2)]


@pytest.mark.parametrize("lateness", [0, 3])
def test_lateness_only_delays_closing_on_in_order_streams(lateness: int) -> None:
    stream = [algebra.Reading(i, "a", t, i) for i, t in enumerate((0, 4, 9, 15, 30), 1)]
    spec = WindowSpec(10, 10, lateness_us=lateness)
    assert incremental(spec, stream) == reference(10, 10, stream)
