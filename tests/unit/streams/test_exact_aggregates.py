"""Windowed SUM and AVG kept exactly (aspen.streams.exactsum): a window's sum is the real sum
of its stored values rounded once (``math.fsum``), its average the real sum over the count
rounded once, whatever order the values came in or left in; the same in the rules, the zone
rule, stream networks, the reference algebra, Def. 2, Replay-Lazy, every provenance mode and
across a restart with the state through JSON."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aspen.errors import EngineError
from aspen.readings.modes import MODES
from aspen.readings.rule_local import rule_frame
from aspen.readings.rule_rows import StreamState, sensor_advance
from aspen.readings.rule_tables import window_averages
from aspen.streams.algebra import Reading as AlgebraReading
from aspen.streams.algebra import evaluate, replay
from aspen.streams.exactsum import ExactSum, exact_mean, exact_sum
from aspen.streams.incremental import KEEPS, NetworkState
from aspen.streams.networks import parse_network
from aspen.streams.oracle import minimal_provenance
from aspen.streams.rules import SensorState, TriggerRule
from aspen.streams.windows import KeyWindows, Reading, replay_window
from aspen.streams.zones import ZoneReading, ZoneRule, ZoneState

S = 1_000_000  # a second in microseconds
PROBE = (89.6, 90.2, 88.9, 91.3)  # averages exactly 90.0; a running float sum says 90.00…01


def real_mean(values: list[float]) -> float:
    """The real mean of ``values``, rounded once (Python's Fraction → float is)."""
    return float(sum(map(Fraction, values), Fraction(0)) / len(values))


# --- the probe: four readings averaging exactly the threshold --------------------------------

def test_a_running_float_sum_of_the_probe_is_above_the_threshold() -> None:
    """What this is about: adding the probe's values one by one rounds above 360."""
    running = 0.0
    for value in PROBE:
        running += value
    assert running > 360.0 and running / 4 > 90.0
    assert math.fsum(PROBE) == 360.0 and real_mean(list(PROBE)) == 90.0


@pytest.mark.parametrize("order", list(itertools.permutations(PROBE)))
def test_the_probe_window_averages_90_and_does_not_trigger_in_any_order(order) -> None:
    rule = TriggerRule()  # avg over 60 s > 90 triggers
    stream = [Reading(i, i * S, v) for i, v in enumerate(order, 1)]
    stream.append(Reading(9, 200 * S, 0.0))  # closes [0, 60)
    step = SensorState().add_all(rule, stream)
    window = step.closed[0]
    assert (window.count, window.total, window.avg) == (4, 360.0, 90.0)
    assert not rule.triggers(window) and step.decisions == []


def test_the_probe_is_not_hot_in_the_zone_rule() -> None:
    rule = ZoneRule(count=4, sensors=1)
    for order in itertools.permutations(PROBE):
        step = ZoneState().add_all(rule, [ZoneReading(i, "a", i * S, v)
                                          for i, v in enumerate(order, 1)])
        assert step.decisions == []
    step = ZoneState().add_all(rule, [ZoneReading(i, "a", i * S, v + 1e-13)
                                      for i, v in enumerate(PROBE, 1)])
    assert [d.op for d in step.decisions] == ["insert"]  # just above 90 does trigger


def test_the_probe_through_a_network_the_algebra_and_def_2_agree_exactly() -> None:
    """A window's avg and a selection at the threshold above it: the incremental network (each
    mode), the reference algebra and Def. 2 all see 90.0, so nothing passes ``> 90``."""
    window = {"aggregate": {"stream": "readings"}, "window": {"seconds": 60},
              "functions": ["avg(value)", "sum(value)"], "name": "w"}
    for query in (window, {"select": window, "where": "avg_value > 90", "name": "hot"}):
        network = parse_network({"name": "n", "lateness_s": 0, "query": query})
        for order in itertools.permutations(PROBE):
            readings = [AlgebraReading(i, "a", float(i), v) for i, v in enumerate(order, 1)]
            want = evaluate(network.query, {"readings": readings})
            for keep in KEEPS:
                state = NetworkState(network, keep)
                got = state.step(readings).outputs + state.finish()
                assert [dict(r.data) for r in got] == [dict(r.data) for r in want]
            if query is window:
                assert [(r["avg_value"], r["sum_value"]) for r in want] == [(90.0, 360.0)]
                assert minimal_provenance(network.query, {"readings": readings}, want[0]) == [
                    {"readings": frozenset({1, 2, 3, 4})}]
            else:
                assert want == []


def test_a_replay_at_the_threshold_finds_what_the_stream_emitted_and_nothing_else() -> None:
    """Replay-Lazy through the algebra: the window averaging exactly 90 passed no ``> 90``
    selection in the stream and passes none in the replay; the one just above does in both."""
    network = parse_network({"name": "n", "lateness_s": 0, "query": {
        "select": {"aggregate": {"stream": "readings"}, "window": {"seconds": 60},
                   "functions": ["avg(value)"], "name": "w"},
        "where": "avg_value > 90", "name": "hot"}})
    above = (*PROBE[:3], PROBE[3] + 1e-13)
    readings = [AlgebraReading(i, "a", float(t), v) for i, (t, v) in enumerate(
        [(t, v) for t, v in zip((1, 2, 3, 4), PROBE, strict=True)]
        + [(t, v) for t, v in zip((61, 62, 63, 64), above, strict=True)], 1)]
    state = NetworkState(network, "covering")
    emitted = state.step(readings).outputs + state.finish()
    assert [(row.id[1][2], row.cov) for row in emitted] == [(60.0, {"readings": (5, 8)})]
    found = replay(network.query, {"readings": readings},
                   [{"readings": (1, 4)}, emitted[0].cov],
                   [("hot", ("w", "a", 0.0)), emitted[0].id])
    assert found == {emitted[0].id: {"readings": frozenset({5, 6, 7, 8})}}


def test_the_written_average_is_the_rules_not_the_sum_divided_again() -> None:
    frame = rule_frame(TriggerRule(), "eager", pd.DataFrame({
        "id": [1, 2, 3, 4, 5], "sensor": ["s"] * 5, "value": [*PROBE, 0.0],
        "ts": pd.to_datetime([1, 2, 3, 4, 200], unit="s", utc=True)}))
    windows = frame[frame["kind"] == "window"]
    assert window_averages(windows) == [90.0] and windows["decision"].isna().all()


# --- the exact sum against math.fsum ---------------------------------------------------------

FLOATS = st.one_of(
    st.floats(-1e300, 1e300, allow_nan=False),  # huge magnitudes (no overflow in ≤ 40 of them)
    st.floats(-1e-300, 1e-300, allow_nan=False),  # tiny ones, subnormals included
    st.floats(-1e3, 1e3, allow_nan=False),
    st.sampled_from([1e16, -1e16, 1.0, -1.0, 0.1, -0.1, 5e-324, -5e-324, 1e300, -1e300,
                     2.0 ** 53, 0.0, -0.0, *PROBE]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(FLOATS, max_size=40), st.data())
def test_adds_and_removes_in_any_order_give_fsum_of_the_live_values(values, data) -> None:
    """Values added in a random order, some removed again at random moments: after every
    step the sum is ``math.fsum`` of the values still in, the mean their real mean rounded
    once, and the state the same as if the live values had been added alone, sorted."""
    pending = data.draw(st.permutations(values))
    live: list[float] = []
    acc = ExactSum()
    while pending or live:
        if live and (not pending or data.draw(st.integers(0, 2)) == 0):
            value = live.pop(data.draw(st.integers(0, len(live) - 1)))
            acc.remove(value)
        else:
            value = pending.pop()
            acc.add(value)
            live.append(value)
        assert acc.value == math.fsum(live)
        if live:
            mean = acc.mean(len(live))
            assert mean == real_mean(live) and min(live) <= mean <= max(live)
        assert acc.to_state() == ExactSum.of(sorted(live)).to_state()
        assert ExactSum.from_state(json.loads(json.dumps(acc.to_state()))) == acc


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(-2 ** 70, 2 ** 70), FLOATS), min_size=1, max_size=20))
def test_ints_and_floats_sum_exactly_and_ints_alone_stay_ints(values) -> None:
    exact = sum(map(Fraction, values), Fraction(0))
    got = exact_sum(values)
    if all(isinstance(v, int) for v in values):
        assert type(got) is int and got == exact
    else:
        assert got == float(exact)
    assert exact_mean(values) == float(exact / len(values))


def test_infinities_and_nan_follow_ieee_and_leave_again() -> None:
    acc = ExactSum.of([1.0, math.inf])
    assert acc.value == math.inf and acc.mean(2) == math.inf
    acc.add(-math.inf)
    assert math.isnan(acc.value)
    acc.remove(math.inf)
    acc.remove(-math.inf)
    assert acc.value == 1.0
    assert ExactSum.from_state(acc.to_state()) == acc
    acc.add(math.nan)
    assert math.isnan(ExactSum.from_state(json.loads(json.dumps(acc.to_state()))).value)
    assert ExactSum.of([1e308, 1e308]).value == math.inf  # beyond the float range: ±inf
    with pytest.raises(EngineError, match="take numbers"):
        ExactSum().add("9")


# --- state across restarts -------------------------------------------------------------------

NEAR = [*PROBE, 90.0, 89.9, 90.1, 89.7, 90.3, 90.4, 89.5, 0.1, 0.2, 0.3]


@st.composite
def near_threshold(draw: st.DrawFn) -> tuple[TriggerRule, list[Reading]]:
    """A rule (avg or sum, tumbling or sliding) and one sensor's readings whose windows often
    average the threshold up to the last bit."""
    slide = draw(st.sampled_from([60.0, 30.0, 20.0]))
    aggregate = draw(st.sampled_from(["avg", "sum"]))
    rule = TriggerRule(aggregate=aggregate, slide_s=slide, lateness_s=draw(st.sampled_from(
        [0.0, 30.0])), threshold=90.0 if aggregate == "avg" else 360.0)
    times = draw(st.lists(st.integers(0, 400), min_size=1, max_size=40))
    stream = [Reading(i, t * S, draw(st.sampled_from(NEAR))) for i, t in enumerate(times, 1)]
    return rule, stream


def frame(readings: list[Reading]) -> pd.DataFrame:
    return pd.DataFrame({"id": [r.id for r in readings], "ts_us": [r.ts_us for r in readings],
                         "value": [r.value for r in readings]})


def spark_run(rule: TriggerRule, mode: str, readings: list[Reading],
              cuts: list[int]) -> pd.DataFrame:
    """The state store's step over micro-batches cut at ``cuts``: the sensor's state is JSON
    text between them, as Spark keeps it (a restart reads it back the same way)."""
    advance = sensor_advance(rule, mode)
    text, out = None, []
    bounds = [0, *cuts, len(readings)]
    for lo, hi in itertools.pairwise(bounds):
        rows, text = advance("s", [frame(readings[lo:hi])], text)
        out.append(rows)
        assert StreamState.from_json(text).to_json() == text  # a round trip changes nothing
    return pd.concat(out, ignore_index=True)


def windows_of(rows: pd.DataFrame) -> list[tuple]:
    found = rows[rows["kind"] == "window"]
    return list(zip(found["start_us"], found["count"], found["total"], found["avg"],
                    found["decision"].fillna(""), strict=True))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_threshold(), st.lists(st.integers(0, 40), max_size=3))
def test_decisions_at_the_threshold_agree_across_modes_and_restarts(case, cuts) -> None:
    """Each mode, with restarts between micro-batches, gives the windows and decisions of one
    uninterrupted run; every window's sum and avg are the exact ones of its readings (as
    Reduced-Eager's ids or a Replay-Lazy replay of its covering interval name them)."""
    rule, stream = case
    cuts = sorted(min(c, len(stream)) for c in cuts)
    whole = SensorState().add_all(rule, stream)
    decided = {d.window.start_us: d.op for d in whole.decisions}
    want = [(w.start_us, w.count, w.total, w.avg, decided.get(w.start_us, ""))
            for w in whole.closed]
    value = {r.id: r.value for r in stream}
    dropped = {r.id for r, _why in whole.dropped}
    for window in whole.closed:
        values = [value[i] for i in window.ids]
        assert window.total == math.fsum(values) and window.avg == real_mean(values)
        # Replay-Lazy: the covering interval's readings, those the stream dropped left out
        interval = [r for r in stream if window.first <= r.id <= window.last
                    and r.id not in dropped]
        assert replay_window(rule.spec, interval, window.start_us) == window.ids
        replay = KeyWindows()
        again = [w for w in [*replay.add_all(rule.spec, interval).closed,
                             *replay.flush(rule.spec)] if w.start_us == window.start_us]
        assert [(w.total, w.avg) for w in again] == [(window.total, window.avg)]
    for mode in MODES:
        assert windows_of(spark_run(rule, mode, stream, cuts)) == want, mode


@settings(max_examples=100, deadline=None)
@given(near_threshold(), st.integers(0, 40))
def test_state_without_exact_sums_is_still_read(case, cut) -> None:
    """State written before sums were exact: each open window's sum restarts from its stored
    total (the caveat: that total's own rounding stays), exact from there on."""
    rule, stream = case
    cut = min(cut, len(stream))
    state = SensorState()
    state.add_all(rule, stream[:cut])
    data = json.loads(state.windows.to_json())
    data["open"] = [item[:8] for item in data["open"]]  # the format without exact sums
    old = KeyWindows.from_json(json.dumps(data))
    assert {s: w.sum.value for s, w in old.open.items()} == {
        s: w.sum.value for s, w in state.windows.open.items()}
    totals = {s: w.sum.value for s, w in old.open.items()}
    resumed = SensorState(old, state.triggered).add_all(rule, stream[cut:])
    later = {r.id: r.value for r in stream[cut:]}
    for window in resumed.closed:
        after = [later[i] for i in window.ids if i in later]
        assert window.total == math.fsum([totals.get(window.start_us, 0.0), *after])


def test_network_state_keeps_exact_sums_through_json_and_reads_old_state() -> None:
    network = parse_network({"name": "n", "lateness_s": 0, "query": {
        "aggregate": {"stream": "readings"}, "window": {"seconds": 60},
        "functions": ["avg(value)", "sum(value)", "max(value)"], "name": "w"}})
    readings = [AlgebraReading(i, "a", float(i), v) for i, v in enumerate(PROBE, 1)]
    state = NetworkState(network)
    for reading in readings:  # a restart after every reading
        state.step([reading])
        text = state.to_json()
        state = NetworkState.from_json(network, text)
        assert state.to_json() == text
    assert [(r["avg_value"], r["sum_value"], r["max_value"]) for r in state.finish()] == [
        (90.0, 360.0, 91.3)]
    data = json.loads(NetworkState(network).to_json())  # an old state: sums as plain numbers
    old = NetworkState(network)
    old.step(readings[:2])
    data = json.loads(old.to_json())
    for _key, _start, acc in data["nodes"]["w"]["open"]:
        del acc[6]
    resumed = NetworkState.from_json(network, json.dumps(data))
    resumed.step(readings[2:])
    (row,) = resumed.finish()
    assert row["sum_value"] == math.fsum([PROBE[0] + PROBE[1], *PROBE[2:]])
