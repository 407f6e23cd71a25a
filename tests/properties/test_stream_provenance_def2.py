"""Stream provenance by meaning: on random small streams and networks, the provenance the
operator rules give (aspen.streams.algebra) is Def. 2's smallest provenance set, found by brute
force (aspen.streams.oracle), and replaying covering intervals gives it back.

The networks: a selection then a window aggregation (tumbling, sliding or count windows), a
projection (alone or under a window), a union of two streams then a window, a windowed join,
and two stacked windows without a selection between them. Where the two semantics part, the
test says which one Aspen returns:

- sliding time windows: when one of a window's readings also lies in another window, Def. 2
  has no set (every subset that forms the window forms a second one, so it never yields exactly
  one row); Aspen returns the window's readings;
- a selection between stacked windows (§11 item 8), and count windows with a slide above 1
  after a union (Def. 2's prefix drops a stream P has no reading of, which moves the windows'
  grid), are left out of the Def. 2 test; their exact tests are in
  tests/unit/streams/test_stream_algebra.py. Here only the replay of the first is checked.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.streams.algebra import (
    Aggregate,
    CountWindow,
    Join,
    Network,
    Project,
    Reading,
    Row,
    Select,
    Stream,
    TimeWindow,
    Union,
    evaluate,
    replay,
)
from aspen.streams.oracle import provenance_sets

FUNCTIONS = ("avg", "count", "max", "min", "sum")


@st.composite
def streams(draw: st.DrawFn, min_size: int, max_size: int,
            sensors: tuple[str, ...]) -> list[Reading]:
    """Readings 1..n with random sensors and values, times ascending (ties allowed)."""
    rows = draw(st.lists(st.tuples(st.sampled_from(sensors), st.integers(0, 3),
                                   st.integers(0, 9)), min_size=min_size, max_size=max_size))
    readings, ts = [], 0
    for i, (sensor, step, value) in enumerate(rows, start=1):
        ts += step
        readings.append(Reading(i, sensor, ts, value))
    return readings


tumbling = st.builds(TimeWindow, st.integers(1, 4))
sliding = st.integers(1, 3).flatmap(
    lambda slide: st.builds(TimeWindow, st.integers(slide + 1, 2 * slide + 2), st.just(slide)))
counting = st.builds(CountWindow, st.integers(1, 3), st.integers(1, 4))
# stacked without a selection between: inner count windows must not skip rows (slide ≤ count)
inner_windows = st.one_of(tumbling, st.integers(1, 3).flatmap(
    lambda count: st.builds(CountWindow, st.just(count), st.integers(1, count))))
aggregates = st.lists(st.sampled_from(FUNCTIONS), min_size=1, max_size=2, unique=True).map(
    lambda fns: tuple((fn, "value") for fn in fns))


def above(threshold: int) -> Select:
    return Select(Stream("s"), lambda row: row["value"] > threshold, name="σ")


@st.composite
def networks(draw: st.DrawFn) -> tuple[Network, dict[str, list[Reading]]]:
    """A random network of one of the shapes above, with its inputs (≤ 10 readings)."""
    sensors = draw(st.sampled_from([("a",), ("a", "b")]))
    key = draw(st.sampled_from(["sensor", None]))
    window = draw(st.one_of(tumbling, sliding, counting))
    aggs = draw(aggregates)
    threshold = draw(st.integers(-1, 8))
    shape = draw(st.sampled_from(["window", "project", "union", "join", "nested"]))
    if shape in ("union", "join"):
        inputs = {"s": draw(streams(2, 5, sensors)), "t": draw(streams(2, 5, sensors))}
    else:
        inputs = {"s": draw(streams(4, 10 if shape == "window" else 8, sensors))}
    if shape == "window":
        return Aggregate(above(threshold), window, aggs, key), inputs
    if shape == "project":
        merged = draw(st.booleans())  # map every sensor to one key, or keep it
        mapped = Project(Stream("s"), {"sensor": (lambda row: "all") if merged else "sensor",
                                       "ts": "ts", "value": lambda row: 2 * row["value"] - 7})
        return (Aggregate(mapped, window, aggs, key) if draw(st.booleans()) else mapped), inputs
    if shape == "union":
        if isinstance(window, CountWindow):  # see the module's docstring
            window = CountWindow(window.count, 1)
        return Aggregate(Union(above(threshold), Stream("t")), window, aggs, key), inputs
    if shape == "join":
        return Join(above(threshold), Stream("t"), draw(st.integers(0, 4)), key), inputs
    inner = Aggregate(Stream("s"), draw(inner_windows), (("sum", "value", "value"),), key,
                      name="inner")
    return Aggregate(inner, draw(st.one_of(tumbling, counting)), aggs, key), inputs


def shared_with_another_window(network: Network, inputs: dict, row: Row) -> bool:
    """Whether a reading of ``row``'s sliding time window also lies in another window."""
    window = getattr(network, "window", None)
    if not isinstance(window, TimeWindow) or window.step == window.size:
        return False
    times = {(s, r.id): r.ts for s, rs in inputs.items() for r in rs}
    return any(len(window.starts(times[s, i])) > 1 for s, ids in row.prov.items() for i in ids)


def eager(rows: list[Row]) -> dict:
    return {row.id: dict(row.prov) for row in rows}


def batches_of(out: list[Row]) -> list[list[Row]]:
    """Replay requests: each output alone, neighbours in pairs (overlapping or not), all."""
    return [[row] for row in out] + [out[i:i + 2] for i in range(len(out) - 1)] + [out]


@settings(max_examples=400, deadline=None)
@given(case=networks())
def test_the_rules_give_def_2s_smallest_provenance_set(case) -> None:
    network, inputs = case
    out = evaluate(network, inputs)
    sets = provenance_sets(network, inputs)
    for row in out:
        if shared_with_another_window(network, inputs, row):
            assert sets[row.id] == [], row  # Def. 2 has none; Aspen keeps the window's readings
        else:
            assert sets[row.id] == [row.prov], row  # the one smallest set is the rules' set


@settings(max_examples=300, deadline=None)
@given(case=networks())
def test_replaying_covering_intervals_gives_the_eager_provenance(case) -> None:
    network, inputs = case
    out = evaluate(network, inputs)
    for batch in batches_of(out):
        found = replay(network, inputs, [r.cov for r in batch], [r.id for r in batch])
        assert found == eager(batch)


@st.composite
def stacked_with_a_selection(draw: st.DrawFn) -> tuple[Network, dict[str, list[Reading]]]:
    """Two stacked windows with a selection on the inner aggregate between them (§11 item 8)."""
    sensors = draw(st.sampled_from([("a",), ("a", "b")]))
    key = draw(st.sampled_from(["sensor", None]))
    fn = draw(st.sampled_from(FUNCTIONS))
    inner = Aggregate(Stream("s"), draw(st.one_of(tumbling, sliding, counting)),
                      ((fn, "value", "value"),), key, name="inner")
    threshold, low = draw(st.integers(0, 20)), draw(st.booleans())
    # a part of a window can pass where the whole does not: below a threshold, or avg/min/max
    passing = Select(inner, (lambda row: row["value"] < threshold) if low else
                     (lambda row: row["value"] > threshold), name="hot")
    outer = Aggregate(passing, draw(st.one_of(tumbling, counting)), (("sum", "value"),), key)
    return outer, {"s": draw(streams(4, 12, sensors))}


@settings(max_examples=300, deadline=None)
@given(case=stacked_with_a_selection())
def test_a_replay_across_a_selection_between_windows_is_never_wrong(case) -> None:
    """A partial inner window at a slice's edge can pass the selection; such rows are dropped,
    so a replay returns the eager set or leaves the target out, never another set. With count
    windows (always full) nothing is left out."""
    network, inputs = case
    out = evaluate(network, inputs)
    wanted = eager(out)
    for batch in batches_of(out):
        found = replay(network, inputs, [r.cov for r in batch], [r.id for r in batch])
        assert found.items() <= wanted.items()
        inner = network.child.child
        if isinstance(inner.window, CountWindow) and isinstance(network.window, CountWindow):
            assert found == eager(batch)
