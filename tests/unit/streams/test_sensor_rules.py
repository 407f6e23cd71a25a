"""Per-sensor windows and triggering rules (aspen.streams.windows, aspen.streams.rules): exact
tests on tiny literal streams, and on random streams the incremental state, cut into
micro-batches and serialized between them, against a from-scratch evaluation of the rule."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.errors import ConfigError
from aspen.streams.rules import SensorState, TriggerRule, aggregate_of
from aspen.streams.windows import KeyWindows, Reading, WindowSpec, window_starts

S = 1_000_000  # a second in microseconds


def readings(*rows: tuple[int, float, float]) -> list[Reading]:
    """Readings from (id, seconds, value)."""
    return [Reading(i, round(t * S), v) for i, t, v in rows]


# --- windows ---------------------------------------------------------------------------------

def test_a_time_at_a_window_end_belongs_to_the_next_window() -> None:
    spec = WindowSpec(60 * S, 60 * S)
    assert window_starts(spec, 0) == [0]
    assert window_starts(spec, 60 * S - 1) == [0]
    assert window_starts(spec, 60 * S) == [60 * S]


def test_sliding_windows_hold_a_time_in_size_over_slide_windows() -> None:
    spec = WindowSpec(60 * S, 20 * S)
    assert window_starts(spec, 65 * S) == [20 * S, 40 * S, 60 * S]
    assert window_starts(spec, 60 * S) == [20 * S, 40 * S, 60 * S]
    assert window_starts(spec, 59 * S) == [0, 20 * S, 40 * S]


def test_windows_are_aligned_to_the_epoch_not_to_the_first_reading() -> None:
    step = KeyWindows().add_all(WindowSpec(10 * S, 10 * S),
                                readings((1, 7, 1.0), (2, 13, 2.0), (3, 31, 3.0)))
    assert [(w.start_us // S, w.ids) for w in step.closed] == [(0, (1,)), (10, (2,))]


def test_late_and_duplicate_readings_are_dropped_and_reported() -> None:
    spec = WindowSpec(10 * S, 10 * S, lateness_us=5 * S)
    step = KeyWindows().add_all(spec, readings(
        (1, 12, 1.0), (2, 8, 2.0),   # 8 ≥ 12 − 5: in time, window [0, 10)
        (3, 20, 3.0), (4, 14, 4.0),  # 14 < 20 − 5: late
        (5, 20, 9.0),                # the time of reading 3: a duplicate
        (6, 40, 1.0)))
    assert [(r.id, why) for r, why in step.dropped] == [(4, "late"), (5, "duplicate")]
    assert [(w.start_us // S, w.ids, w.total) for w in step.closed] == [
        (0, (2,), 2.0), (10, (1,), 1.0), (20, (3,), 3.0)]


def test_a_window_closes_only_when_the_watermark_passes_its_end() -> None:
    spec = WindowSpec(10 * S, 10 * S, lateness_us=5 * S)
    key = KeyWindows()
    assert key.add_all(spec, readings((1, 1, 1.0), (2, 14, 1.0))).closed == []
    assert [w.start_us for w in key.add_all(spec, readings((3, 15, 1.0))).closed] == [0]


@pytest.mark.parametrize(("size", "slide", "lateness"), [(0, 0, 0), (10, 20, 0), (10, 5, -1)])
def test_impossible_windows_are_refused(size: int, slide: int, lateness: int) -> None:
    with pytest.raises(ConfigError):
        WindowSpec(size, slide, lateness)


# --- rules -----------------------------------------------------------------------------------

def test_the_default_rule_triggers_above_90_and_untriggers_at_90() -> None:
    state = SensorState()
    step = state.add_all(TriggerRule(), readings(
        (1, 10, 95.0), (2, 20, 89.0),    # [0, 60): avg 92 > 90
        (3, 70, 90.0),                   # [60, 120): avg 90, not above
        (4, 130, 91.0), (5, 250, 0.0)))  # [120, 180): 91
    assert [(d.op, d.window.start_us // S) for d in step.decisions] == [
        ("insert", 0), ("delete", 60), ("insert", 120)]
    assert state.triggered


def test_a_window_with_the_state_it_already_has_decides_nothing() -> None:
    step = SensorState().add_all(TriggerRule(), readings(
        (1, 10, 95.0), (2, 70, 99.0), (3, 130, 50.0), (4, 190, 50.0), (5, 300, 50.0)))
    assert [(d.op, d.window.start_us // S) for d in step.decisions] == [
        ("insert", 0), ("delete", 120)]


def test_outliers_are_dropped_before_the_window() -> None:
    rule = TriggerRule(outlier_above=350.0)
    step = SensorState().add_all(rule, readings((1, 1, 399.0), (2, 2, 91.0), (3, 100, 1.0)))
    assert [(r.id, why) for r, why in step.dropped] == [(1, "outlier")]
    assert [(d.op, d.window.ids) for d in step.decisions] == [("insert", (2,))]


def test_a_rule_is_checked_when_made() -> None:
    with pytest.raises(ConfigError):
        TriggerRule(aggregate="median")
    with pytest.raises(ConfigError):
        TriggerRule(name="a b")
    with pytest.raises(ConfigError):
        TriggerRule(size_s=60, slide_s=90)


# --- random streams against a from-scratch evaluation ----------------------------------------

def from_scratch(rule: TriggerRule, stream: list[Reading]) -> tuple[list, list, list]:
    """The rule evaluated over the whole stream at once: (closed windows as (start, ids),
    dropped (id, reason), decisions (op, start))."""
    spec = rule.spec
    kept: list[Reading] = []
    dropped = []
    for reading in sorted(stream, key=lambda r: r.id):
        earlier = [r.ts_us for r in kept]
        if earlier and reading.ts_us < max(earlier) - spec.lateness_us:
            dropped.append((reading.id, "late"))
        elif reading.ts_us in earlier:
            dropped.append((reading.id, "duplicate"))
        else:
            kept.append(reading)
    if not kept:
        return [], dropped, []
    mark = max(r.ts_us for r in kept) - spec.lateness_us
    members: dict[int, list[Reading]] = defaultdict(list)
    for reading in kept:
        start = reading.ts_us - reading.ts_us % spec.slide_us
        while start > reading.ts_us - spec.size_us:
            members[start].append(reading)
            start -= spec.slide_us
    closed = sorted((start, tuple(sorted(r.id for r in rows)))
                    for start, rows in members.items() if start + spec.size_us <= mark)
    decisions, triggered = [], False
    for start, _ in closed:
        values = [r.value for r in members[start]]
        window_value = {"avg": sum(values) / len(values), "min": min(values), "max": max(values),
                        "count": float(len(values)), "sum": sum(values)}[rule.aggregate]
        if (window_value > rule.threshold) != triggered:
            triggered = not triggered
            decisions.append(("insert" if triggered else "delete", start))
    return closed, dropped, decisions


RULES = st.builds(
    TriggerRule,
    aggregate=st.sampled_from(("avg", "min", "max", "count", "sum")),
    size_s=st.sampled_from((10.0, 20.0)),
    slide_s=st.sampled_from((5.0, 10.0)),
    threshold=st.sampled_from((2.0, 50.0, 90.0)),
    lateness_s=st.sampled_from((0.0, 3.0, 15.0)),
)


@st.composite
def streams(draw: st.DrawFn) -> list[Reading]:
    times = draw(st.lists(st.integers(0, 120), min_size=0, max_size=30))
    values = draw(st.lists(st.sampled_from((1.0, 50.0, 89.5, 90.0, 95.0, 120.0)),
                           min_size=len(times), max_size=len(times)))
    return [Reading(i + 1, t * S, v) for i, (t, v) in enumerate(zip(times, values, strict=True))]


@settings(max_examples=300, deadline=None)
@given(rule=RULES, stream=streams(), cuts=st.lists(st.integers(0, 30), max_size=4))
def test_incremental_micro_batches_equal_the_whole_stream_at_once(
        rule: TriggerRule, stream: list[Reading], cuts: list[int]) -> None:
    if rule.slide_s > rule.size_s:
        rule = TriggerRule(aggregate=rule.aggregate, size_s=rule.slide_s, slide_s=rule.size_s,
                           threshold=rule.threshold, lateness_s=rule.lateness_s)
    bounds = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
    text = SensorState().to_json()
    closed, dropped, decisions = [], [], []
    for low, high in zip(bounds, bounds[1:], strict=False):
        state = SensorState.from_json(text)  # what the state store hands the next batch
        step = state.add_all(rule, stream[low:high])
        closed += [(w.start_us, w.ids) for w in step.closed]
        dropped += [(r.id, why) for r, why in step.dropped]
        decisions += [(d.op, d.window.start_us) for d in step.decisions]
        for window in step.closed:
            assert window.count == len(window.ids)
            assert aggregate_of(window, "avg") == pytest.approx(window.total / window.count)
        text = state.to_json()
    assert (closed, dropped, decisions) == from_scratch(rule, stream)


@settings(max_examples=150, deadline=None)
@given(rule=RULES, stream=streams())
def test_what_a_window_keeps_changes_nothing_but_its_provenance(
        rule: TriggerRule, stream: list[Reading]) -> None:
    if rule.slide_s > rule.size_s:
        return
    runs = {keep: SensorState(KeyWindows(keep=keep)).add_all(rule, stream)
            for keep in ("ids", "covering", "none")}
    full = runs["ids"]
    for keep, step in runs.items():
        assert [(w.start_us, w.count, w.total, w.low, w.high) for w in step.closed] == \
            [(w.start_us, w.count, w.total, w.low, w.high) for w in full.closed]
        assert [(d.op, d.window.start_us) for d in step.decisions] == \
            [(d.op, d.window.start_us) for d in full.decisions]
        for window, whole in zip(step.closed, full.closed, strict=True):
            assert window.ids == (whole.ids if keep == "ids" else ())
            covering = (min(whole.ids), max(whole.ids)) if keep != "none" else (0, 0)
            assert window.covering == covering
