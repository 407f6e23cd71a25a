"""TID-set encodings of stream provenance: the seed's Examples 8-10 exactly, round trips of every
encoding and of the adaptive writer, orphan repair after a selection, sizes, covering intervals.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.errors import AspenError, ConfigError, OrphanDeltaError, ProvenanceError
from aspen.streams.encoding import (
    MAX_SET_SIZE,
    MAX_TID,
    Header,
    ProvenanceDecoder,
    ProvenanceEncoder,
    Thresholds,
    apply_delta,
    as_tid_set,
    compare_encodings,
    covering,
    covering_of,
    decode,
    decode_stream,
    delta_of,
    encode,
    encode_stream,
    from_intervals,
    merge_intervals,
    read_header,
    reencode_kept,
    sensor_windows,
    to_intervals,
)

# Example 8: sum over count windows of 4, slide 1, after a selection dropped TID 5
W1, W2, W3 = (1, 2, 3, 4), (2, 3, 4, 6), (3, 4, 6, 7)
FORMS = list(itertools.product((False, True), (False, True)))  # (interval, compress)

# ---------------------------------------------------------------- strategies

BASES = st.one_of(st.just(1), st.integers(1, 10**6), st.integers(2**62 - 10**4, 2**62 + 10**4),
                  st.just(MAX_TID - 400))


@st.composite
def tid_sets(draw: st.DrawFn, max_size: int = 60) -> tuple[int, ...]:
    """Clustered sets (runs and small gaps from a base, up to near 2**63) or scattered ones."""
    if draw(st.booleans()):
        return as_tid_set(draw(st.lists(st.integers(1, MAX_TID), max_size=max_size)))
    base = draw(BASES)
    gaps = draw(st.lists(st.integers(1, 5), max_size=max_size))
    ids, tid = [], base
    for gap in gaps:
        ids.append(tid)
        tid += gap
    return as_tid_set(tid for tid in ids if tid <= MAX_TID)


@st.composite
def sliding_windows(draw: st.DrawFn) -> list[tuple[int, ...]]:
    """Count windows over one sensor's readings, whose ids are interleaved with others'."""
    readings = draw(tid_sets(max_size=120).filter(bool))
    window = draw(st.integers(1, 20))
    slide = draw(st.integers(1, window + 3))
    starts = range(0, max(len(readings) - window, 0) + 1, slide)
    return [readings[i:i + window] for i in starts]


set_sequences = st.one_of(sliding_windows(), st.lists(tid_sets(), max_size=25))

thresholds = st.builds(
    Thresholds, alpha=st.sampled_from([0.0, 0.5, 1.0, 2.5]),
    beta=st.sampled_from([0.0, 0.25, 0.5, 1.0]), gamma=st.integers(0, 6),
    delta=st.integers(1, 8), epsilon=st.sampled_from([0, 16, 64, 10**6]))


# ---------------------------------------------------------------- the seed's examples


def test_intervals_of_the_example_windows() -> None:
    assert to_intervals(W1) == [(1, 4)]
    assert to_intervals(W2) == [(2, 4), (6, 6)]
    assert to_intervals(W3) == [(3, 4), (6, 7)]


def test_deltas_count_the_kept_trailing_ids_of_the_full_set() -> None:
    # Example 9: 3:{6} is {2,3,4} ∪ {6}; 2:{6,7} is {3,4} ∪ {6,7}, both against {1,2,3,4}
    assert delta_of(W1, W2) == (3, (6,))
    assert delta_of(W1, W3) == (2, (6, 7))
    assert apply_delta(W1, 3, (6,)) == W2
    assert apply_delta(W1, 2, (6, 7)) == W3
    assert delta_of(W1, W1) == (4, ())


def test_example_headers_and_bytes() -> None:
    assert read_header(encode(W1)) == Header(interval=False, delta=False, compressed=False,
                                             count=4)
    assert encode(W1, interval=True) == bytes([0x01, 1, 1, 3])  # I, 1 interval, lo 1, hi-lo 3
    delta = encode(W3, interval=True, last_full=W1)
    # I+D, 1 appended interval, k=2, lo 6 = 4 + zigzag⁻¹(4), hi - lo = 1
    assert delta == bytes([0x03, 1, 2, 4, 1])
    assert read_header(encode(W2, last_full=W1)).overlap == 3


def test_adaptive_writer_on_the_example() -> None:
    writer = ProvenanceEncoder()
    encoded = [writer.encode(w) for w in (W1, W2, W3)]
    headers = [read_header(data) for data in encoded]
    assert [(h.delta, h.interval, h.overlap) for h in headers] == [
        (False, True, 0), (True, True, 3), (True, True, 2)]
    assert writer.last_full == W1 and writer.deltas_since == 2
    assert decode_stream(encoded) == [W1, W2, W3]


def test_a_delta_without_its_full_set_is_refused() -> None:
    data = encode(W2, last_full=W1)
    with pytest.raises(OrphanDeltaError, match="last full set"):
        decode(data)
    with pytest.raises(OrphanDeltaError):
        ProvenanceDecoder().decode(data)
    assert issubclass(OrphanDeltaError, ProvenanceError)
    assert issubclass(OrphanDeltaError, AspenError)


def test_orphan_repair_on_the_example() -> None:
    stream = encode_stream([W1, W2, W3])
    kept = reencode_kept(stream, [False, True, True])
    assert not read_header(kept[0]).delta
    assert read_header(kept[1]).delta and read_header(kept[1]).overlap == 3  # {3,4,6} of W2
    assert decode_stream(kept) == [W2, W3]
    assert reencode_kept(stream, [True, False, True]) == [stream[0], stream[2]]


# ---------------------------------------------------------------- round trips


@settings(max_examples=150, deadline=None)
@given(tid_sets())
def test_every_full_form_round_trips(ids: tuple[int, ...]) -> None:
    assert from_intervals(to_intervals(ids)) == ids
    for interval, compress in FORMS:
        data = encode(ids, interval=interval, compress=compress)
        assert decode(data) == ids
        header = read_header(data)
        assert (header.interval, header.compressed, header.delta) == (interval, compress, False)
        assert header.count == (len(to_intervals(ids)) if interval else len(ids))


@settings(max_examples=150, deadline=None)
@given(tid_sets(), tid_sets())
def test_every_delta_form_round_trips(full: tuple[int, ...], ids: tuple[int, ...]) -> None:
    k, appended = delta_of(full, ids)
    assert full[len(full) - k:] == tuple(t for t in ids if t not in appended)
    assert apply_delta(full, k, appended) == ids
    for interval, compress in FORMS:
        data = encode(ids, interval=interval, last_full=full, compress=compress)
        assert decode(data, last_full=full) == ids
        assert read_header(data).overlap == k


@settings(max_examples=80, deadline=None)
@given(set_sequences, thresholds)
def test_adaptive_writer_round_trips(sets: list[tuple[int, ...]], limits: Thresholds) -> None:
    writer, reader = ProvenanceEncoder(limits), ProvenanceDecoder()
    run = 0
    for ids in sets:
        data = writer.encode(ids)
        assert reader.decode(data) == ids
        header = read_header(data)
        run = run + 1 if header.delta else 0
        assert run <= limits.gamma and run == writer.deltas_since
        if not header.delta:  # deflate is kept only when it shrinks the set
            assert len(data) <= len(encode(ids, interval=header.interval))


@settings(max_examples=40, deadline=None)
@given(sliding_windows())
def test_contiguous_windows_are_intervals_and_deltas(sets: list[tuple[int, ...]]) -> None:
    windows = [tuple(range(w[0], w[0] + len(w))) for w in sets]  # the same shapes, no gaps
    encoded = encode_stream(windows)
    for ids, data in zip(windows, encoded, strict=True):
        header = read_header(data)
        if len(ids) > 2:  # (lo, hi - lo) beats the ids themselves from three ids on
            assert header.interval and header.count <= 1
        if not header.delta:
            assert len(data) <= len(encode(ids, interval=True))


# ---------------------------------------------------------------- orphan repair


@settings(max_examples=120, deadline=None)
@given(set_sequences, thresholds, st.data())
def test_orphan_repair_keeps_a_decodable_stream(
    sets: list[tuple[int, ...]], limits: Thresholds, data: st.DataObject
) -> None:
    stream = encode_stream(sets, limits)
    keep = data.draw(st.lists(st.booleans(), min_size=len(sets), max_size=len(sets)))
    kept = reencode_kept(stream, keep)
    assert decode_stream(kept) == [ids for ids, flag in zip(sets, keep, strict=True) if flag]
    # a full set, or a delta whose full set survives, passes through unchanged
    if all(keep):
        assert kept == stream


def test_orphan_repair_rebases_every_delta_of_a_dropped_full_set() -> None:
    sets = [tuple(range(i, i + 20)) for i in range(1, 8)]
    stream = encode_stream(sets)
    assert [read_header(d).delta for d in stream] == [False] + [True] * 6
    kept = reencode_kept(stream, [False, False, True, False, True, True, True])
    assert [read_header(d).delta for d in kept] == [False, True, True, True]
    assert [read_header(d).overlap for d in kept[1:]] == [18, 17, 16]
    assert decode_stream(kept) == [sets[2], sets[4], sets[5], sets[6]]
    with pytest.raises(ProvenanceError, match="keep flags"):
        reencode_kept(stream, [True])


# ---------------------------------------------------------------- sizes and covering intervals


@settings(max_examples=150, deadline=None)
@given(tid_sets(), tid_sets())
def test_intervals_take_at_most_twice_the_single_ids(full: tuple[int, ...],
                                                     ids: tuple[int, ...]) -> None:
    assert len(encode(ids, interval=True)) <= 2 * len(encode(ids))
    assert len(encode(ids, interval=True, last_full=full)) <= 2 * len(encode(ids, last_full=full))


@settings(max_examples=100, deadline=None)
@given(tid_sets().filter(bool), tid_sets())
def test_covering_interval_holds_the_set(ids: tuple[int, ...], full: tuple[int, ...]) -> None:
    lo, hi = covering(ids)
    assert (lo, hi) == (min(ids), max(ids)) and all(lo <= t <= hi for t in ids)
    assert covering_of(encode(ids, interval=True)) == (lo, hi)
    assert covering_of(encode(ids, last_full=full, compress=True), full) == (lo, hi)


def test_covering_of_nothing_is_an_error() -> None:
    with pytest.raises(ProvenanceError):
        covering(())


@settings(max_examples=100, deadline=None)
@given(st.lists(tid_sets(max_size=12), max_size=4))
def test_merged_intervals_are_the_union(sets: list[tuple[int, ...]]) -> None:
    union = as_tid_set(t for ids in sets for t in ids)
    assert merge_intervals(*(to_intervals(ids) for ids in sets)) == to_intervals(union)


def test_edge_sets_round_trip() -> None:
    for ids in [(), (1,), (MAX_TID,), (2**62,), (1, MAX_TID), (MAX_TID - 1, MAX_TID)]:
        for interval, compress in FORMS:
            assert decode(encode(ids, interval=interval, compress=compress)) == ids
            assert decode(encode(ids, interval=interval, last_full=(), compress=compress),
                          ()) == ids
            assert decode(encode(ids, interval=interval, last_full=(MAX_TID,)),
                          (MAX_TID,)) == ids


def test_compare_encodings_favours_the_adaptive_writer() -> None:
    sizes = compare_encodings(windows=30, sensors=(1, 3), slides=(1, 60))
    assert set(sizes) == {(1, 1), (1, 60), (3, 1), (3, 60)}
    for row in sizes.values():
        assert row["adaptive"] <= min(row["single"], row["interval"])
    assert sizes[(1, 1)]["adaptive"] < sizes[(1, 1)]["interval"] < sizes[(1, 1)]["single"]
    assert sensor_windows(3, 2, 1, 3, first_id=5) == [(5, 6, 7), (7, 8, 9), (9, 10, 11)]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("ids", [(0,), (3, 2), (2, 2), (MAX_TID + 1,), (True,)])
def test_invalid_sets_are_refused(ids: tuple[int, ...]) -> None:
    with pytest.raises(ProvenanceError, match="strictly increasing"):
        encode(ids)


@pytest.mark.parametrize("data", [
    b"", b"\x08\x00", b"\x00\x02\x05", b"\x00\x01\x05\x00", b"\x00\x01\x00",
    b"\x00\x01" + b"\xff" * 11, b"\x04\x01\x02\xff\xff", b"\x04\x01\x09" + b"\x00" * 9,
    b"\x01\x01\x01\xff\xff\xff\xff\x0f", bytes([0x00, 1]) + bytes([0xff] * 9 + [0x01]),
])
def test_corrupt_bytes_are_refused(data: bytes) -> None:
    with pytest.raises(ProvenanceError):
        decode(data)


def test_huge_interval_is_refused_before_expanding() -> None:
    data = bytes([0x01, 1, 1]) + encode_varint(MAX_SET_SIZE)
    with pytest.raises(ProvenanceError, match="more than"):
        decode(data)


def test_a_delta_keeping_more_than_its_full_set_is_refused() -> None:
    with pytest.raises(ProvenanceError, match="keeps 5 ids"):
        decode(bytes([0x02, 0, 5]), last_full=W1)


def test_invalid_thresholds_are_refused() -> None:
    with pytest.raises(ConfigError):
        Thresholds(beta=1.5)
    with pytest.raises(ConfigError):
        Thresholds(delta=0)


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
