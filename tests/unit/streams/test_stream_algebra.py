"""Ariadne's stream algebra with provenance (aspen.streams.algebra) and Def. 2 by brute force
(aspen.streams.oracle): exact tests on tiny literal streams, after the seed's examples (§4.3,
§7.1, §7.2.2) and the correctness properties of the digest (§14)."""

from __future__ import annotations

import pytest

from aspen.errors import AspenError, ConfigError, EngineError
from aspen.streams.algebra import (
    Aggregate,
    CountWindow,
    Join,
    Project,
    Reading,
    Row,
    Select,
    Stream,
    TimeWindow,
    Union,
    evaluate,
    replay,
    trace,
)
from aspen.streams.oracle import conditions, minimal_provenance, provenance_sets

SUM = (("sum", "value"),)
SUM_AS_VALUE = (("sum", "value", "value"),)  # for stacking: the outer level sums it again


def readings(*rows: tuple[int, str, float, float]) -> list[Reading]:
    """Readings from (id, sensor, ts, value)."""
    return [Reading(*row) for row in rows]


def series(values: list[float], sensor: str = "a") -> list[Reading]:
    """Readings 1..n of one sensor at times 1..n with these values."""
    return [Reading(i, sensor, i, v) for i, v in enumerate(values, start=1)]


def ids(row: Row, stream: str = "s") -> list[int]:
    return sorted(row.prov.get(stream, ()))


def eager(rows: list[Row]) -> dict:
    return {row.id: dict(row.prov) for row in rows}


# --- the seed's examples ---------------------------------------------------------------------

def test_the_worked_example_of_def_2_gives_t6_the_provenance_t2_t3() -> None:
    """α_{sum(a), 𝒞(2,1)} over T1..T4, all a = 5 (§4.3): T5, T6, T7 are all 10; T6 is ⟪T2,T3⟫.
    {T1,T2} fails condition 2 (its prefix ends with T5), {T1,T3} condition 3."""
    inputs = {"s": [Reading(i, "x", 0, 5) for i in (1, 2, 3, 4)]}
    q = Aggregate(Stream("s"), CountWindow(2, 1), SUM, key=None)
    t5, t6, t7 = evaluate(q, inputs)
    assert [t["sum_value"] for t in (t5, t6, t7)] == [10, 10, 10]
    assert ids(t6) == [2, 3]
    assert minimal_provenance(q, inputs, t6) == [{"s": {2, 3}}]
    assert conditions(q, inputs, t6, {"s": {1, 2}}) == (True, False, True)
    assert conditions(q, inputs, t6, {"s": {1, 3}}) == (True, True, False)
    assert conditions(q, inputs, t6, {"s": {2, 3}}) == (True, True, True)


def example_8() -> tuple[Aggregate, dict[str, list[Reading]]]:
    """σ_{a>7} → count window 4, slide 1 → sum(a); reading 5 is filtered out (§7.1)."""
    q = Aggregate(Select(Stream("s"), lambda r: r["value"] > 7), CountWindow(4, 1), SUM,
                  key=None)
    return q, {"s": series([8, 9, 10, 11, 3, 12, 13])}


def test_example_8_windows_skip_the_filtered_reading() -> None:
    q, inputs = example_8()
    out = evaluate(q, inputs)
    assert [ids(row) for row in out] == [[1, 2, 3, 4], [2, 3, 4, 6], [3, 4, 6, 7]]
    assert [row["sum_value"] for row in out] == [38, 42, 46]
    assert provenance_sets(q, inputs) == {row.id: [row.prov] for row in out}


def test_replay_resets_window_state_between_disjoint_intervals() -> None:
    """𝒞(3,2) over 1..7 (§7.2.2): replaying [1,3] and [5,7] as one run would form ⟨3,5,6⟩."""
    inputs = {"s": series([1, 2, 3, 4, 5, 6, 7])}
    q = Aggregate(Stream("s"), CountWindow(3, 2), SUM, key=None)
    w1, w3, w5 = evaluate(q, inputs)
    assert [ids(w) for w in (w1, w3, w5)] == [[1, 2, 3], [3, 4, 5], [5, 6, 7]]
    assert (w1.cov, w5.cov) == ({"s": (1, 3)}, {"s": (5, 7)})

    no_reset = evaluate(q, {"s": [r for r in inputs["s"] if r.id != 4]})
    assert [ids(w) for w in no_reset] == [[1, 2, 3], [3, 5, 6]]

    assert replay(q, inputs, [w1.cov, w5.cov], [w1.id, w5.id]) == eager([w1, w5])
    assert replay(q, inputs, [w1.cov, w3.cov], [w1.id, w3.id]) == eager([w1, w3])  # 1..5


# --- time windows ----------------------------------------------------------------------------

def test_tumbling_windows_put_a_reading_at_a_window_end_in_the_next_window() -> None:
    inputs = {"s": readings((1, "a", 0, 1), (2, "a", 9, 2), (3, "a", 10, 3), (4, "a", 19, 4),
                            (5, "a", 20, 5))}
    out = evaluate(Aggregate(Stream("s"), TimeWindow(10), SUM), inputs)
    assert [(row["start"], row["end"], ids(row)) for row in out] == [
        (0, 10, [1, 2]), (10, 20, [3, 4]), (20, 30, [5])]
    assert out[0].data == {"sensor": "a", "start": 0, "end": 10, "ts": 0, "sum_value": 3}
    assert [row.id for row in out] == [("α", "a", 0), ("α", "a", 10), ("α", "a", 20)]


def test_sliding_windows_are_epoch_aligned_and_half_open() -> None:
    inputs = {"s": readings((1, "a", 4, 1), (2, "a", 5, 2), (3, "a", 10, 3))}
    out = evaluate(Aggregate(Stream("s"), TimeWindow(10, 5), SUM), inputs)
    assert [(row["start"], ids(row)) for row in out] == [
        (-5, [1]), (0, [1, 2]), (5, [2, 3]), (10, [3])]
    assert TimeWindow(10, 5).starts(9.99) == [0, 5]


def test_windows_are_per_key_and_emitted_when_their_last_reading_arrives() -> None:
    inputs = {"s": readings((1, "a", 1, 1), (2, "b", 2, 10), (3, "a", 3, 2), (4, "b", 12, 20),
                            (5, "a", 14, 3))}
    out = evaluate(Aggregate(Stream("s"), TimeWindow(10), SUM), inputs)
    assert [(row["sensor"], row["start"], ids(row)) for row in out] == [
        ("b", 0, [2]), ("a", 0, [1, 3]), ("b", 10, [4]), ("a", 10, [5])]
    counted = evaluate(Aggregate(Stream("s"), CountWindow(2, 1), SUM), inputs)
    assert [(row["sensor"], ids(row), row["ts"]) for row in counted] == [
        ("a", [1, 3], 1), ("b", [2, 4], 2), ("a", [3, 5], 3)]


# --- per-operator rules (§14 item 6) ---------------------------------------------------------

def test_selection_and_projection_outputs_have_one_reading() -> None:
    inputs = {"s": series([3, 9, 8])}
    q = Project(Select(Stream("s"), lambda r: r["value"] > 5),
                {"sensor": "sensor", "ts": "ts", "double": lambda r: 2 * r["value"]})
    out = evaluate(q, inputs)
    assert [(ids(row), row["double"]) for row in out] == [([2], 18), ([3], 16)]
    assert out[0].id == ("π", ("σ", ("s", 2)))


def test_an_aggregation_output_has_exactly_its_window() -> None:
    inputs = {"s": series([1, 2, 3, 4, 5])}
    run = trace(Aggregate(Stream("s"), CountWindow(3, 1), SUM, key=None, name="w"), inputs)
    assert [ids(row) for row in run.outputs] == [
        sorted(r.id[1] for r in window) for window in run.windows["w"]]


def test_a_join_output_has_its_left_and_right_reading() -> None:
    inputs = {"l": readings((1, "a", 0, 1), (2, "b", 5, 2)),
              "r": readings((1, "a", 0, 10), (2, "a", 3, 11), (3, "b", 5, 12), (4, "a", 4, 13))}
    out = evaluate(Join(Stream("l"), Stream("r"), range=3), inputs)
    assert [(ids(row, "l"), ids(row, "r")) for row in out] == [
        ([1], [1]), ([1], [2]), ([2], [3])]  # r4 is 4 after l1: out of range
    assert out[1].data == {"sensor": "a", "ts": 0, "value": 1, "r_sensor": "a", "r_ts": 3,
                           "r_value": 11}
    assert provenance_sets(Join(Stream("l"), Stream("r"), range=3), inputs) == {
        row.id: [row.prov] for row in out}


def test_filtered_readings_and_readings_in_no_window_are_in_no_provenance() -> None:
    inputs = {"s": series([9, 1, 9, 9, 9, 9, 9])}
    q = Aggregate(Select(Stream("s"), lambda r: r["value"] > 5), CountWindow(2, 3), SUM,
                  key=None)  # after the selection: 1 3 | 4 skipped | 5 6 | 7 skipped
    out = evaluate(q, inputs)
    assert [ids(row) for row in out] == [[1, 3], [5, 6]]
    assert provenance_sets(q, inputs) == {row.id: [row.prov] for row in out}


# --- covering intervals (§14 item 10) --------------------------------------------------------

def test_a_covering_interval_is_the_hull_of_the_provenance_in_each_stream() -> None:
    q, inputs = example_8()
    out = evaluate(q, inputs)
    assert out[1].cov == {"s": (2, 6)}  # covers the filtered reading 5 too
    two = {"s": series([1, 2, 3, 4]), "t": series([5, 6, 7], sensor="b")}
    union = Aggregate(Union(Stream("s"), Stream("t")), TimeWindow(4), SUM, key=None)
    for row in [*out, *evaluate(union, two)]:
        assert row.cov == {s: (min(p), max(p)) for s, p in row.prov.items()}


# --- nested aggregation (§14 item 9) ---------------------------------------------------------

def test_k_stacked_count_windows_of_w_give_k_w_minus_1_plus_1_contiguous_ids() -> None:
    q: Stream | Aggregate = Stream("s")
    for level in (1, 2, 3):
        q = Aggregate(q, CountWindow(3, 1), SUM_AS_VALUE, key=None, name=f"α{level}")
    out = evaluate(q, {"s": series([1] * 9)})
    assert [ids(row) for row in out] == [list(range(i, i + 7)) for i in (1, 2, 3)]
    assert [row["value"] for row in out] == [27, 27, 27]


# --- Replay-Lazy = Reduced-Eager (§14 item 11) -----------------------------------------------

def replay_networks() -> list[tuple[str, object, dict[str, list[Reading]]]]:
    two_sensors = {"s": readings((1, "a", 1, 5), (2, "b", 2, 9), (3, "a", 4, 7), (4, "a", 6, 1),
                                 (5, "b", 7, 3), (6, "a", 11, 8), (7, "b", 12, 2))}
    nested: Stream | Aggregate = Stream("s")
    for level in (1, 2):
        nested = Aggregate(nested, CountWindow(2, 1), SUM_AS_VALUE, key=None, name=f"α{level}")
    return [
        ("example 8", example_8()[0], example_8()[1]),
        ("tumbling per sensor", Aggregate(Stream("s"), TimeWindow(5), SUM), two_sensors),
        ("sliding per sensor", Aggregate(Stream("s"), TimeWindow(6, 3), SUM), two_sensors),
        ("count 2,2 per sensor", Aggregate(Stream("s"), CountWindow(2, 2), SUM), two_sensors),
        ("nested count", nested, {"s": series([1, 2, 3, 4, 5, 6])}),
        ("union then window",
         Aggregate(Union(Stream("s"), Stream("t")), TimeWindow(4), SUM),
         {"s": series([1, 2, 3, 4, 5]), "t": series([6, 7, 8], sensor="a")}),
        ("join", Join(Stream("s"), Stream("t"), range=2),
         {"s": series([1, 2, 3, 4]), "t": series([5, 6, 7, 8])}),
    ]


@pytest.mark.parametrize(("label", "q", "inputs"), replay_networks(),
                         ids=[n[0] for n in replay_networks()])
def test_replaying_covering_intervals_gives_the_eager_provenance(label, q, inputs) -> None:
    out = evaluate(q, inputs)
    assert out, label
    for row in out:  # one request at a time
        assert replay(q, inputs, [row.cov], [row.id]) == eager([row])
    assert replay(q, inputs, [r.cov for r in out], [r.id for r in out]) == eager(out)
    for a, b in zip(out, out[1:], strict=False):  # neighbours: often overlapping
        assert replay(q, inputs, [a.cov, b.cov], [a.id, b.id]) == eager([a, b])
    first, last = out[0], out[-1]  # often disjoint
    assert replay(q, inputs, [first.cov, last.cov], [first.id, last.id]) == eager([first, last])


def test_replay_drops_a_time_window_that_the_slice_holds_only_part_of() -> None:
    inputs = {"s": readings((1, "a", 0, 1), (2, "a", 1, 2), (3, "a", 12, 3))}
    q = Aggregate(Stream("s"), TimeWindow(10), SUM)
    first = evaluate(q, inputs)[0]
    assert replay(q, inputs, [first.cov], [first.id]) == eager([first])
    assert replay(q, inputs, [{"s": (2, 2)}], [first.id]) == {}  # reading 1 is outside


def test_a_replay_leaves_out_a_target_that_a_partial_window_would_change() -> None:
    """Sliding inner sums below 5 feed outer tumbling sums per sensor. Replayed with sensor b's
    window, the slice 1..5 holds only a3 of the inner window [2,4) of a (a4 is outside); that
    part sums to 4 and passes, so the run gives a's outer window {1, 3, 4} instead of {1, 3}.
    The window is incomplete (a4 falls in it), so a's target is left out, alone too."""
    inputs = {"s": readings((1, "a", 0, 1), (2, "b", 0, 0), (3, "a", 1, 1), (4, "a", 2, 4),
                            (5, "b", 2, 0), (6, "a", 3, 9))}
    inner = Aggregate(Stream("s"), TimeWindow(2, 1), SUM_AS_VALUE, name="inner")
    q = Aggregate(Select(inner, lambda r: r["value"] < 5, name="low"), TimeWindow(4), SUM)
    out = {row.id: row for row in evaluate(q, inputs)}
    a, b = out["α", "a", 0], out["α", "b", 0]
    assert (ids(a), ids(b)) == ([1, 3], [2, 5])
    sliced = {"s": inputs["s"][:5]}
    assert [ids(row) for row in evaluate(q, sliced) if row.id == a.id] == [[1, 3, 4]]
    assert replay(q, inputs, [a.cov, b.cov], [a.id, b.id]) == eager([b])
    assert replay(q, inputs, [a.cov], [a.id]) == {}


# --- where Def. 2 and the operator rules part (§11 item 8) -----------------------------------

def test_a_selection_between_stacked_count_windows_parts_def_2_from_the_rules() -> None:
    """Inner 𝒞(3,1) windows 1 and 5 pass the selection, 2-4 do not. The rules give their union
    {1,2,3,5,6,7}; run alone it forms ⟨2,3,5⟩ (condition 3) and more outputs (condition 1).
    Def. 2's one smallest set is every reading from 1 to 7. Aspen returns the rules' set (it is
    what the Spark job and the replay compute); these networks stay out of the random ones."""
    inputs = {"s": series([10, 10, 10, 0, 10, 10, 10])}
    inner = Aggregate(Stream("s"), CountWindow(3, 1), SUM_AS_VALUE, key=None, name="inner")
    passing = Select(inner, lambda r: r["value"] > 25, name="hot")
    q = Aggregate(passing, CountWindow(2, 1), SUM, key=None, name="outer")
    (t,) = evaluate(q, inputs)
    assert ids(t) == [1, 2, 3, 5, 6, 7]
    assert conditions(q, inputs, t, t.prov) == (False, True, False)
    assert [ids(w) for w in evaluate(inner, {"s": [r for r in inputs["s"] if r.id != 4]})] == [
        [1, 2, 3], [2, 3, 5], [3, 5, 6], [5, 6, 7]]
    assert minimal_provenance(q, inputs, t) == [{"s": frozenset(range(1, 8))}]
    assert replay(q, inputs, [t.cov], [t.id]) == eager([t])


def test_after_a_union_def_2s_prefix_moves_the_grid_of_count_windows() -> None:
    """𝒞(2,2) over s ∪ t forms ⟨s1,t1⟩, ⟨t2,t3⟩. For ⟨t2,t3⟩ the rules give {t2,t3}; its prefix
    𝕀 ↑ P keeps no reading of s (P has none), so the grid starts at t1 and the prefix run ends
    with ⟨t1,t2⟩: condition 2 fails, and every set with s1 forms other windows. Def. 2 has no
    set; Aspen returns the rules' one (the random networks use slide 1 after a union)."""
    inputs = {"s": readings((1, "a", 0, 1)),
              "t": readings((1, "a", 1, 2), (2, "a", 2, 3), (3, "a", 3, 4))}
    q = Aggregate(Union(Stream("s"), Stream("t")), CountWindow(2, 2), SUM)
    first, second = evaluate(q, inputs)
    assert (first.prov, second.prov) == ({"s": {1}, "t": {1}}, {"t": {2, 3}})
    assert conditions(q, inputs, second, second.prov) == (True, False, True)
    assert provenance_sets(q, inputs) == {first.id: [first.prov], second.id: []}


def test_sliding_time_windows_have_no_def_2_provenance_set() -> None:
    """Both readings lie in two windows, so every subset forming a window forms two rows."""
    inputs = {"s": readings((1, "a", 4, 1), (2, "a", 6, 2))}
    q = Aggregate(Stream("s"), TimeWindow(10, 5), SUM)
    out = evaluate(q, inputs)
    assert [ids(row) for row in out] == [[1], [1, 2], [2]]
    assert provenance_sets(q, inputs) == {row.id: [] for row in out}


# --- contracts -------------------------------------------------------------------------------

def test_misuse_raises_aspen_errors() -> None:
    with pytest.raises(EngineError, match="ascending"):
        evaluate(Stream("s"), {"s": readings((2, "a", 0, 1), (1, "a", 1, 1))})
    with pytest.raises(EngineError, match="no input stream"):
        evaluate(Stream("s"), {"t": []})
    twice = Union(Select(Stream("s"), bool), Select(Stream("s"), callable))
    with pytest.raises(EngineError, match="named 'σ'"):
        evaluate(twice, {"s": []})
    with pytest.raises(ConfigError):
        Aggregate(Stream("s"), CountWindow(2, 1), (("median", "value"),))
    with pytest.raises(ConfigError):
        TimeWindow(5, 10)
    with pytest.raises(ConfigError):
        CountWindow(0, 1)
    with pytest.raises(EngineError, match="one interval per target"):
        replay(Stream("s"), {"s": []}, [], [("s", 1)])
    with pytest.raises(EngineError, match="at most 12"):
        provenance_sets(Stream("s"), {"s": series([1] * 13)})
    assert issubclass(EngineError, AspenError) and issubclass(ConfigError, AspenError)
