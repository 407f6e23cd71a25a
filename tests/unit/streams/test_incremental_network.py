"""Stream networks run incrementally (aspen.streams.incremental) against the reference algebra
run from scratch (aspen.streams.algebra): on random networks and streams cut at random into
micro-batches, with the state through JSON between them, the outputs equal the algebra's over
the readings kept — ids, attributes, provenance and covering intervals."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aspen.errors import ConfigError, EngineError
from aspen.streams.algebra import Reading, Row, evaluate
from aspen.streams.encoding import decode_per_stream
from aspen.streams.incremental import KEEPS, NetworkState, kept_readings
from aspen.streams.networks import parse_network

STREAMS = {"a": "value > 20", "b": "sensor <> 's1'"}
PREDICATES = ["value > 50", "value <= 70 OR sensor = 's0'", "ts >= 4"]
FUNCTIONS = ["avg(value) AS value", "max(value) AS value", "sum(value) AS value",
             "count(value) AS value", "min(value) AS value"]


def chain(draw: st.DrawFn, depth: int) -> dict[str, Any]:
    """Selections and projections over a stream: rows in id order."""
    node: dict[str, Any] = {"stream": draw(st.sampled_from(sorted(STREAMS)))}
    for _ in range(draw(st.integers(0, depth))):
        if draw(st.booleans()):
            node = {"select": node, "where": draw(st.sampled_from(PREDICATES))}
        else:
            node = {"project": node, "columns": {
                "sensor": "sensor", "ts": "ts",
                "value": draw(st.sampled_from(["value * 2 - 1", "abs(value - 50)", "value"]))}}
    return node


@st.composite
def operators(draw: st.DrawFn, depth: int = 2) -> dict[str, Any]:
    kind = draw(st.sampled_from(["chain", "time", "count", "union", "join"] if depth else
                                ["chain", "count"]))
    if kind == "chain":
        return chain(draw, 2)
    if kind == "count":
        return {"aggregate": chain(draw, 1), "functions": [draw(st.sampled_from(FUNCTIONS))],
                "window": {"rows": draw(st.integers(1, 3)), "slide": draw(st.integers(1, 3))}}
    if kind == "time":
        size = draw(st.sampled_from([2, 3, 4, 6]))
        slide = draw(st.sampled_from([d for d in (1, 2, 3, 6) if d <= size]))
        return {"aggregate": draw(operators(depth - 1)),
                "functions": [draw(st.sampled_from(FUNCTIONS))],
                "window": {"seconds": size, "slide": slide}}
    if kind == "union":
        return {"union": [draw(operators(depth - 1)), draw(operators(depth - 1))]}
    return {"join": [draw(operators(depth - 1)), draw(operators(depth - 1))],
            "within_s": draw(st.sampled_from([0, 1, 3]))}


def ungrouped(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its top operator keyed by nothing (the network runs as one group)."""
    return {**node, "key": None} if "aggregate" in node or "join" in node else node


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], list[Reading], list[int]]:
    query = draw(operators())
    if draw(st.booleans()):
        query = ungrouped(query)
    spec = {"name": "n", "streams": STREAMS, "lateness_s": draw(st.sampled_from([0, 2, 5])),
            "query": query}
    count = draw(st.integers(0, 24))
    times = draw(st.lists(st.integers(0, 40), min_size=count, max_size=count))
    readings = [Reading(i + 1, draw(st.sampled_from(["s0", "s1", "s2"])), t / 2,
                        float(draw(st.integers(0, 100)))) for i, t in enumerate(times)]
    cuts = sorted(draw(st.lists(st.integers(0, count), max_size=4)))
    return spec, readings, cuts


def incremental(spec: dict[str, Any], readings: list[Reading], cuts: list[int],
                keep: str = "ids") -> list[Row]:
    """Every output of the network fed in micro-batches cut at ``cuts``, each group's state
    through JSON between batches, then finished."""
    network = parse_network(spec)
    states: dict[str, str] = {}
    outputs: list[Row] = []
    written: list[tuple[Row, bytes, dict]] = []
    bounds = [0, *cuts, len(readings)]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        groups: dict[str, list[Reading]] = {}
        for reading in readings[lo:hi]:
            groups.setdefault(reading.sensor if network.partition else "", []).append(reading)
        for group, part in groups.items():
            state = (NetworkState.from_json(network, states[group]) if group in states
                     else NetworkState(network, keep))
            step = state.step(part).outputs
            outputs.extend(step)
            if state.encoder is not None:  # Reduced-Eager bytes, the encoder through JSON too
                written.extend((row, *state.encoder.encode(row.prov, row.id)) for row in step)
            states[group] = state.to_json()
    for text in states.values():
        outputs.extend(NetworkState.from_json(network, text).finish())
    blobs = {row.id: blob for row, blob, _bases in written}
    for row, blob, bases in written:  # every delta decodes against its base's full set
        full = {s: decode_per_stream(blobs[base])[s] for s, base in bases.items()}
        assert decode_per_stream(blob, full) == {s: tuple(sorted(ids))
                                                 for s, ids in row.prov.items()}
    return outputs


def from_scratch(spec: dict[str, Any], readings: list[Reading]) -> list[Row]:
    network = parse_network(spec)
    kept: list[Reading] = []
    groups = {r.sensor if network.partition else "" for r in readings}
    for group in groups:
        kept += kept_readings(network, [r for r in readings
                                        if (r.sensor if network.partition else "") == group])
    kept.sort(key=lambda r: r.id)
    inputs = {stream: [r for r in kept if predicate(
        {"id": r.id, "sensor": r.sensor, "ts": r.ts, "value": r.value})]
        for stream, predicate in network.streams.items()}
    return evaluate(network.query, inputs)


def same_data(one: dict[str, Any], two: dict[str, Any]) -> bool:
    """Equal to the last bit: sums and averages are exact in both (rounded once)."""
    return one.keys() == two.keys() and all(one[k] == two[k] for k in one)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(KEEPS))
def test_incremental_outputs_equal_the_algebra_from_scratch(case, keep: str) -> None:
    """In every mode: Reduced-Eager rows carry ids and intervals, Replay-Lazy intervals only,
    and without provenance neither; the outputs are the same."""
    spec, readings, cuts = case
    got = incremental(spec, readings, cuts, keep)
    want = {row.id: row for row in from_scratch(spec, readings)}
    ids = [row.id for row in got]
    assert len(ids) == len(set(ids)), "an output was emitted twice"
    assert set(ids) == set(want)
    for row in got:
        assert same_data(dict(row.data), dict(want[row.id].data)), row.id
        assert dict(row.prov) == (dict(want[row.id].prov) if keep == "ids" else {}), row.id
        assert dict(row.cov) == (dict(want[row.id].cov) if keep != "none" else {}), row.id


# --- tiny literal cases ----------------------------------------------------------------------

def run(spec_query: dict[str, Any], rows: list[tuple[int, str, float, float]],
        lateness: float = 0) -> tuple[list[Row], list[Row]]:
    """(outputs while streaming one reading per step, outputs at finish)."""
    network = parse_network({"name": "t", "lateness_s": lateness, "query": spec_query})
    state = NetworkState(network)
    live = [out for row in rows for out in state.step([Reading(*row)]).outputs]
    return live, state.finish()


def test_a_time_window_closes_when_the_watermark_reaches_its_end() -> None:
    query = {"aggregate": {"stream": "readings"}, "window": {"seconds": 10},
             "functions": ["sum(value)"], "name": "w"}
    live, rest = run(query, [(1, "a", 1, 1.0), (2, "a", 9, 2.0), (3, "a", 10, 4.0)])
    assert [(r.id, r["sum_value"]) for r in live] == [(("w", "a", 0.0), 3.0)]
    assert [(r.id, r["sum_value"]) for r in rest] == [(("w", "a", 10.0), 4.0)]


def test_a_late_reading_is_dropped_and_one_within_the_lateness_counts() -> None:
    network = parse_network({"name": "t", "lateness_s": 5, "query": {
        "aggregate": {"stream": "readings"}, "window": {"seconds": 10},
        "functions": ["count(value)"], "name": "w"}})
    state = NetworkState(network)
    state.step([Reading(1, "a", 20, 1.0)])
    step = state.step([Reading(2, "a", 16, 1.0), Reading(3, "a", 14, 1.0)])
    assert [(r.id, why) for r, why in step.dropped] == [(3, "late")]
    assert [(r.id, r["count_value"]) for r in state.finish()] == [(("w", "a", 10.0), 1),
                                                                   (("w", "a", 20.0), 1)]


def test_a_count_window_emits_as_it_fills_and_never_a_partial_one() -> None:
    query = {"aggregate": {"stream": "readings"}, "window": {"rows": 2, "slide": 2},
             "functions": ["sum(value)"], "name": "c"}
    live, rest = run(query, [(1, "a", 0, 1.0), (2, "a", 0, 2.0), (3, "a", 0, 4.0)])
    assert [(r.id, r["sum_value"], sorted(r.prov["readings"])) for r in live] == [
        (("c", "a", ("readings", 1)), 3.0, [1, 2])]
    assert rest == []


def test_a_join_waits_until_no_right_row_can_still_meet_the_left_one() -> None:
    query = {"join": [{"select": {"stream": "readings"}, "where": "value > 50", "name": "hot"},
                      {"select": {"stream": "readings"}, "where": "value < 10", "name": "cold"}],
             "within_s": 5, "name": "j"}
    live, _rest = run(query, [(1, "a", 0, 90.0), (2, "a", 3, 5.0), (3, "a", 5, 1.0)])
    assert live == []  # the right side's progress (5) has not passed 0 + 5: 5 may still come
    live, _rest = run(query, [(1, "a", 0, 90.0), (2, "a", 3, 5.0), (3, "a", 5, 1.0),
                              (4, "a", 6.5, 50.0)])
    assert [(r.id[2], sorted(r.prov["readings"])) for r in live] == [
        (("cold", ("readings", 2)), [1, 2]), (("cold", ("readings", 3)), [1, 3])]


def test_a_state_through_json_gives_the_same_outputs() -> None:
    network = parse_network({"name": "t", "lateness_s": 2, "query": {
        "join": [{"stream": "readings"}, {"aggregate": {"stream": "readings"},
                                          "window": {"seconds": 4, "slide": 2},
                                          "functions": ["avg(value) AS value"]}],
        "within_s": 3}})
    readings = [Reading(i, "a", t, float(i)) for i, t in enumerate([0, 1, 3, 2, 5, 9], 1)]
    kept = NetworkState(network)
    carried = NetworkState(network)
    got_kept, got_carried = [], []
    for reading in readings:
        got_kept += kept.step([reading]).outputs
        carried = NetworkState.from_json(network, carried.to_json())
        got_carried += carried.step([reading]).outputs
    assert got_kept == got_carried and got_kept


def test_ids_must_ascend_within_a_group() -> None:
    state = NetworkState(parse_network({"name": "t", "query": {"stream": "readings"}}))
    state.step([Reading(5, "a", 0, 1.0)])
    with pytest.raises(EngineError, match="ids must ascend"):
        state.step([Reading(3, "a", 0, 1.0)])


@pytest.mark.parametrize(("query", "message"), [
    ({"aggregate": {"union": [{"stream": "readings"}, {"stream": "readings"}]},
      "window": {"rows": 2, "slide": 1}}, "count window"),
    ({"aggregate": {"project": {"stream": "readings"}, "columns": {"value": "value"}},
      "window": {"seconds": 2}}, "does not keep it"),
    ({"aggregate": {"stream": "readings"}, "window": {"seconds": 2, "slide": 3}}, "slide"),
    ({"aggregate": {"stream": "readings"}, "window": {"seconds": 2},
      "functions": ["median(value)"]}, "window function"),
    ({"select": {"stream": "readings"}, "where": "sum(value) > 1"}, "unsupported"),
    ({"join": [{"stream": "readings"}], "within_s": 1}, "two operators"),
    ({"select": {"stream": "readings"}, "where": "value > 1", "name": "readings"}, "taken"),
    ({"stream": "readings", "where": "x"}, "unknown field"),
    ({"select": {"stream": "readings"}, "where": "temp > 1"}, "reads temp, which its input"),
    ({"aggregate": {"stream": "readings"}, "window": {"seconds": 2},
      "functions": ["max(humidity)"]}, "reads humidity"),
    ({"select": {"aggregate": {"stream": "readings"}, "window": {"seconds": 2}},
      "where": "value > 1"}, "reads value"),  # the window's output is avg_value
    ({"join": [{"stream": "readings"}, {"aggregate": {"stream": "readings"},
                                        "window": {"seconds": 2}, "key": None}],
      "within_s": 1}, "reads sensor"),
])
def test_networks_the_stream_cannot_run_are_refused_with_a_reason(query, message) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_network({"name": "bad", "query": query})


def test_the_partition_is_the_sensor_only_when_every_key_is() -> None:
    by_sensor = {"aggregate": {"stream": "readings"}, "window": {"seconds": 2}}
    assert parse_network({"name": "n", "query": by_sensor}).partition == "sensor"
    assert parse_network({"name": "n", "query": {**by_sensor, "key": None}}).partition is None
    renamed = {"aggregate": {"project": {"stream": "readings"}, "columns": {
        "sensor": "upper(sensor)", "ts": "ts", "value": "value"}}, "window": {"seconds": 2}}
    assert parse_network({"name": "n", "query": renamed}).partition is None
