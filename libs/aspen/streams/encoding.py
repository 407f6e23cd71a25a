"""Encodings of TID sets, the reading ids behind one window output (Ariadne §7.1): single,
interval, delta and dictionary compression, one self-describing byte format for all of them,
and the adaptive writer of Algorithm 2 with its errata applied.

A *TID set* is a strictly increasing tuple of reading ids, each in ``[1, 2**63 - 1]``.

- **single**: the ids themselves;
- **interval**: ``(lo, hi)`` runs of consecutive ids (:func:`to_intervals`, PG mode), merged
  with :func:`merge_intervals` (PP mode);
- **delta**: against the writer's last *full* set, ``k`` (how many of the full set's trailing
  ids are kept) plus the appended ids, themselves single or interval. A delta decodes in one
  step given its full set; deltas are never chained;
- **dictionary**: the body compressed with :mod:`zlib`. zlib's DEFLATE is LZ77 (the seed's
  dictionary compression) followed by Huffman coding; raw DEFLATE, no zlib wrapper.

Byte format of one encoded set (varints: unsigned LEB128, :mod:`aspen.provenance.varint`)::

    flags  1 byte   bit 0 I: intervals, else single ids; bit 1 D: delta; bit 2 Z: zlib body
    count  varint   ids (single) or intervals (I) in the body; for D, of the appended part
    k      varint   D only: trailing ids of the last full set the delta keeps
    zsize  varint   Z only: byte size of the compressed body
    body            single: first, then (gap - 1) per further id;
                    I: lo, hi - lo, then (lo - previous hi - 2), hi - lo per further interval

The first value is the absolute id for a full set, and ``zigzag(first - last_full[-1])`` for a
delta, whose appended ids sit just after the full set: ids are large, their gaps small.

>>> data = encode((2, 3, 4, 6), interval=True)
>>> to_intervals((2, 3, 4, 6)), decode(data)
([(2, 4), (6, 6)], (2, 3, 4, 6))
>>> decode(encode((2, 3, 4, 6), last_full=(1, 2, 3, 4)), last_full=(1, 2, 3, 4))
(2, 3, 4, 6)
"""

from __future__ import annotations

import random
import sys
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aspen.errors import ConfigError, OrphanDeltaError, ProvenanceError
from aspen.provenance.varint import MAX_VARINT_BYTES, get_varint
from aspen.provenance.varint import put_varint as _put_varint

__all__ = [
    "DEFAULT_THRESHOLDS", "MAX_SET_SIZE", "MAX_TID", "Header", "Interval", "ProvenanceDecoder",
    "ProvenanceEncoder", "TidSet", "Thresholds", "apply_delta", "as_tid_set", "compare_encodings",
    "covering", "covering_of", "decode", "decode_per_stream", "decode_stream", "delta_of", "encode",
    "PerStreamEncoder", "encode_per_stream", "encode_stream", "smallest", "split_per_stream",
    "from_intervals", "merge_intervals", "read_header", "reencode_kept", "sensor_windows",
    "to_intervals",
]

TidSet = tuple[int, ...]
Interval = tuple[int, int]

#: Largest reading id (int64); the smallest is 1.
MAX_TID = 2**63 - 1
#: Most ids one decoded set may hold: a corrupt interval must not expand to 2**60 ids.
MAX_SET_SIZE = 1 << 24

FLAG_INTERVAL, FLAG_DELTA, FLAG_ZLIB = 0x01, 0x02, 0x04
_KNOWN_FLAGS = FLAG_INTERVAL | FLAG_DELTA | FLAG_ZLIB
_WHAT = "TID set bytes"  # how a malformed varint's error names these bytes
_ZLIB_LEVEL = 9


# ---------------------------------------------------------------- TID sets and intervals


def as_tid_set(ids: Iterable[int]) -> TidSet:
    """The TID set of any iterable of ids: sorted, duplicates removed, range checked.

    >>> as_tid_set([4, 2, 2, 3])
    (2, 3, 4)
    """
    return _checked(sorted(set(ids)))


def _checked(ids: Sequence[int]) -> TidSet:
    """``ids`` as a tuple, after checking it is a strictly increasing run of valid ids."""
    previous = 0
    for tid in ids:
        if type(tid) is not int or not previous < tid <= MAX_TID:
            raise ProvenanceError(
                f"a TID set must hold strictly increasing ids in [1, 2**63 - 1]; got {tid!r} "
                f"after {previous}")
        previous = tid
    return tuple(ids)


def to_intervals(ids: Sequence[int]) -> list[Interval]:
    """The runs of consecutive ids of a TID set, as ``(lo, hi)`` pairs (PG mode).

    >>> to_intervals((3, 4, 6, 7, 9))
    [(3, 4), (6, 7), (9, 9)]
    """
    runs: list[Interval] = []
    for tid in ids:
        if runs and runs[-1][1] + 1 == tid:
            runs[-1] = (runs[-1][0], tid)
        else:
            runs.append((tid, tid))
    return runs


def from_intervals(intervals: Iterable[Interval]) -> TidSet:
    """The ids of disjoint, ordered intervals.

    >>> from_intervals([(2, 4), (6, 6)])
    (2, 3, 4, 6)
    """
    return tuple(tid for lo, hi in intervals for tid in range(lo, hi + 1))


def merge_intervals(*lists: Iterable[Interval]) -> list[Interval]:
    """The union of interval lists, as disjoint, non-adjacent intervals (PP mode).

    >>> merge_intervals([(1, 3), (8, 9)], [(4, 5), (7, 7)])
    [(1, 5), (7, 9)]
    """
    merged: list[Interval] = []
    for lo, hi in sorted(pair for intervals in lists for pair in intervals):
        if merged and lo <= merged[-1][1] + 1:  # overlapping or adjacent: one run
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def covering(ids: Sequence[int]) -> Interval:
    """The covering interval ``(min, max)`` of a non-empty TID set (Replay-Lazy, §7.2.2).

    >>> covering((2, 3, 4, 6))
    (2, 6)
    """
    if not ids:
        raise ProvenanceError("the empty TID set has no covering interval")
    return ids[0], ids[-1]


# ---------------------------------------------------------------- delta


def delta_of(full: Sequence[int], ids: Sequence[int]) -> tuple[int, TidSet]:
    """``(k, appended)``: ``ids`` is the last ``k`` ids of ``full`` plus ``appended``.

    ``k`` is the longest suffix of ``full`` inside ``ids`` (Example 9 of the seed).

    >>> delta_of((1, 2, 3, 4), (2, 3, 4, 6)), delta_of((1, 2, 3, 4), (3, 4, 6, 7))
    ((3, (6,)), (2, (6, 7)))
    """
    members = set(ids)
    k = 0
    for tid in reversed(full):
        if tid not in members:
            break
        k += 1
    kept = set(full[len(full) - k:])
    return k, tuple(tid for tid in ids if tid not in kept)


def apply_delta(full: Sequence[int], k: int, appended: Sequence[int]) -> TidSet:
    """The TID set of the delta ``k:{appended}`` against ``full``.

    >>> apply_delta((1, 2, 3, 4), 2, (6, 7))
    (3, 4, 6, 7)
    """
    if not 0 <= k <= len(full):
        raise ProvenanceError(f"a delta keeps {k} ids of a full set of {len(full)}")
    kept = tuple(full[len(full) - k:])
    if not kept or not appended or appended[0] > kept[-1]:
        return kept + tuple(appended)  # the usual case: appended ids follow the full set
    union = tuple(sorted(kept + tuple(appended)))
    if len(set(union)) != len(union):
        raise ProvenanceError("a delta appends ids its full set already keeps")
    return union


# ---------------------------------------------------------------- varints and bodies


def _get_varint(data: bytes, pos: int) -> tuple[int, int]:
    return get_varint(data, pos, _WHAT)


def _zigzag(value: int) -> int:
    return 2 * value if value >= 0 else -2 * value - 1


def _unzigzag(value: int) -> int:
    return value >> 1 if not value & 1 else -((value + 1) >> 1)


def _put_first(out: bytearray, first: int, base: int | None) -> None:
    """The first value: absolute in a full set, zigzag distance to ``base`` in a delta."""
    _put_varint(out, first if base is None else _zigzag(first - base))


def _get_first(data: bytes, pos: int, base: int | None) -> tuple[int, int]:
    value, pos = _get_varint(data, pos)
    return (value if base is None else base + _unzigzag(value)), pos


def _single_body(ids: Sequence[int], base: int | None) -> bytes:
    out = bytearray()
    if ids:
        _put_first(out, ids[0], base)
        for previous, tid in zip(ids, ids[1:], strict=False):
            _put_varint(out, tid - previous - 1)
    return bytes(out)


def _interval_body(runs: Sequence[Interval], base: int | None) -> bytes:
    out = bytearray()
    previous_hi = 0
    for i, (lo, hi) in enumerate(runs):
        if i == 0:
            _put_first(out, lo, base)
        else:
            _put_varint(out, lo - previous_hi - 2)  # runs never touch: the gap is at least 2
        _put_varint(out, hi - lo)
        previous_hi = hi
    return bytes(out)


def _read_single(body: bytes, count: int, base: int | None) -> tuple[list[int], int]:
    ids: list[int] = []
    pos = 0
    if count > len(body):  # every id takes at least one byte
        raise ProvenanceError(f"corrupt TID set bytes: {count} ids in {len(body)} bytes")
    for i in range(count):
        if i == 0:
            tid, pos = _get_first(body, pos, base)
        else:
            gap, pos = _get_varint(body, pos)
            tid = ids[-1] + gap + 1
        ids.append(tid)
    return ids, pos


def _read_intervals(body: bytes, count: int, base: int | None) -> tuple[list[int], int]:
    ids: list[int] = []
    pos = 0
    if 2 * count > len(body):  # every interval takes at least two bytes
        raise ProvenanceError(f"corrupt TID set bytes: {count} intervals in {len(body)} bytes")
    hi = 0
    for i in range(count):
        if i == 0:
            lo, pos = _get_first(body, pos, base)
        else:
            gap, pos = _get_varint(body, pos)
            lo = hi + gap + 2
        length, pos = _get_varint(body, pos)
        hi = lo + length
        if lo < 1 or hi > MAX_TID:
            raise ProvenanceError(f"corrupt TID set bytes: interval [{lo}, {hi}] out of range")
        if len(ids) + length >= MAX_SET_SIZE:
            raise ProvenanceError(f"a decoded TID set of more than {MAX_SET_SIZE} ids")
        ids.extend(range(lo, hi + 1))
    return ids, pos


# ---------------------------------------------------------------- the byte format


@dataclass(frozen=True)
class Header:
    """The header of one encoded TID set: readable without touching (or inflating) the body.

    ``count`` counts ids, or intervals if ``interval``; for a delta, those of the appended part.
    ``overlap`` is the delta's ``k`` (0 for a full set); ``zsize`` the compressed body's size.
    """

    interval: bool
    delta: bool
    compressed: bool
    count: int
    overlap: int = 0
    zsize: int = 0


def read_header(data: bytes) -> Header:
    """The header of an encoded TID set.

    >>> read_header(encode((3, 4, 6, 7), interval=True, last_full=(1, 2, 3, 4)))
    Header(interval=True, delta=True, compressed=False, count=1, overlap=2, zsize=0)
    """
    return _parse_header(data)[0]


def _parse_header(data: bytes) -> tuple[Header, int]:
    if not data:
        raise ProvenanceError("empty TID set bytes: no header")
    flags = data[0]
    if flags & ~_KNOWN_FLAGS:
        raise ProvenanceError(f"unknown TID set flags {flags:#04x}")
    count, pos = _get_varint(data, 1)
    overlap = zsize = 0
    if flags & FLAG_DELTA:
        overlap, pos = _get_varint(data, pos)
    if flags & FLAG_ZLIB:
        zsize, pos = _get_varint(data, pos)
    header = Header(interval=bool(flags & FLAG_INTERVAL), delta=bool(flags & FLAG_DELTA),
                    compressed=bool(flags & FLAG_ZLIB), count=count, overlap=overlap,
                    zsize=zsize)
    return header, pos


def _pack(flags: int, count: int, overlap: int, body: bytes, compress: bool) -> bytes:
    """Header and body; with ``compress``, the body deflated and its size in the header."""
    out = bytearray()
    if compress:
        flags |= FLAG_ZLIB
        deflater = zlib.compressobj(_ZLIB_LEVEL, zlib.DEFLATED, -15)
        body = deflater.compress(body) + deflater.flush()
    out.append(flags)
    _put_varint(out, count)
    if flags & FLAG_DELTA:
        _put_varint(out, overlap)
    if compress:
        _put_varint(out, len(body))
    return bytes(out) + body


def encode(ids: Sequence[int], *, interval: bool = False,
           last_full: Sequence[int] | None = None, compress: bool = False) -> bytes:
    """One TID set as bytes: single or ``interval``, full or a delta against ``last_full``,
    deflated or not (``compress``).

    >>> encode((1, 2, 3, 4)).hex(), encode((1, 2, 3, 4), interval=True).hex()
    ('000401000000', '01010103')
    """
    ids = _checked(ids)
    flags = FLAG_INTERVAL if interval else 0
    overlap, base, part = 0, None, ids
    if last_full is not None:
        flags |= FLAG_DELTA
        overlap, part = delta_of(last_full, ids)
        base = last_full[-1] if last_full else 0
    if interval:
        runs = to_intervals(part)
        return _pack(flags, len(runs), overlap, _interval_body(runs, base), compress)
    return _pack(flags, len(part), overlap, _single_body(part, base), compress)


def _decode(data: bytes, last_full: Sequence[int] | None) -> tuple[Header, TidSet]:
    header, pos = _parse_header(data)
    if header.delta and last_full is None:
        raise OrphanDeltaError(
            "a delta-encoded TID set decodes only against the last full set sent before it "
            "(pass last_full=...; after a selection, re-encode the stream with reencode_kept)")
    body = data[pos:]
    if header.compressed:
        body = _inflate(body, header)
    base = (last_full[-1] if last_full else 0) if header.delta else None
    reader = _read_intervals if header.interval else _read_single
    part, used = reader(body, header.count, base)
    if used != len(body):
        raise ProvenanceError(f"corrupt TID set bytes: {len(body) - used} trailing bytes")
    if part and not 1 <= part[0] <= part[-1] <= MAX_TID:
        raise ProvenanceError(f"corrupt TID set bytes: ids [{part[0]}, {part[-1]}] out of range")
    if header.delta:
        assert last_full is not None
        return header, apply_delta(last_full, header.overlap, part)
    return header, tuple(part)


def _inflate(body: bytes, header: Header) -> bytes:
    """The plain body, refusing more bytes than ``count`` varints could ever take."""
    if len(body) != header.zsize:
        raise ProvenanceError(
            f"corrupt TID set bytes: {len(body)} compressed bytes, header says {header.zsize}")
    limit = header.count * MAX_VARINT_BYTES * (2 if header.interval else 1)
    limit = min(limit, sys.maxsize - 1)  # zlib takes a C size; the body bounds it anyway
    inflater = zlib.decompressobj(-15)
    try:
        plain = inflater.decompress(body, limit + 1)
    except zlib.error as err:
        raise ProvenanceError(f"corrupt compressed TID set: {err}") from None
    if not inflater.eof or inflater.unused_data or len(plain) > limit:
        raise ProvenanceError("corrupt compressed TID set: wrong length")
    return plain


def decode(data: bytes, last_full: Sequence[int] | None = None) -> TidSet:
    """The TID set of encoded bytes; a delta needs ``last_full``, the full set it is based on
    (:class:`~aspen.errors.OrphanDeltaError` without it).

    >>> decode(encode((3, 4, 6, 7), last_full=(1, 2, 3, 4), compress=True), (1, 2, 3, 4))
    (3, 4, 6, 7)
    """
    return _decode(data, last_full)[1]


def covering_of(data: bytes, last_full: Sequence[int] | None = None) -> Interval:
    """The covering interval of an encoded TID set.

    >>> covering_of(encode((2, 3, 4, 6), interval=True))
    (2, 6)
    """
    return covering(decode(data, last_full))


def smallest(ids: Sequence[int], compress_above: int = 64) -> bytes:
    """One full TID set in its smallest form: a list of ids or of intervals, deflated when it
    is longer than ``compress_above`` bytes and that helps (Algorithm 2 without deltas).

    >>> decode(smallest(range(1, 1001))) == tuple(range(1, 1001)), len(smallest(range(1, 1001)))
    (True, 5)
    """
    candidates = [encode(ids), encode(ids, interval=True)]
    if min(map(len, candidates)) > compress_above:
        candidates += [encode(ids, compress=True), encode(ids, interval=True, compress=True)]
    return min(candidates, key=len)


def encode_per_stream(prov: Mapping[str, Iterable[int]]) -> bytes:
    """Provenance over several input streams as bytes: per stream (by name), its name and its
    id set (:func:`smallest`).

    >>> decode_per_stream(encode_per_stream({"s": {3, 1}, "t": {2}}))
    {'s': (1, 3), 't': (2,)}
    """
    return _joined({stream: smallest(sorted(ids)) for stream, ids in prov.items()})


def split_per_stream(data: bytes) -> dict[str, bytes]:
    """The encoded id set of each stream in bytes :func:`encode_per_stream` (or
    :class:`PerStreamEncoder`) wrote, undecoded.

    >>> sorted(split_per_stream(encode_per_stream({"s": {1}, "t": {2}})))
    ['s', 't']
    """
    count, pos = _get_varint(data, 0)
    found: dict[str, bytes] = {}
    for _ in range(count):
        size, pos = _get_varint(data, pos)
        if pos + size > len(data):
            raise ProvenanceError("truncated per-stream TID sets")
        try:
            name = data[pos:pos + size].decode()
        except UnicodeDecodeError:
            raise ProvenanceError("per-stream TID sets with a stream name not UTF-8") from None
        size, pos = _get_varint(data, pos + size)
        if pos + size > len(data):
            raise ProvenanceError("truncated per-stream TID sets")
        found[name] = data[pos:pos + size]
        pos += size
    if pos != len(data):
        raise ProvenanceError("per-stream TID sets with trailing bytes")
    return found


def decode_per_stream(data: bytes,
                      bases: Mapping[str, Sequence[int]] | None = None) -> dict[str, TidSet]:
    """The id sets of bytes :func:`encode_per_stream` or :class:`PerStreamEncoder` wrote, by
    stream; a stream's delta is decoded against ``bases[stream]``, the full set it is based on
    (:class:`~aspen.errors.OrphanDeltaError` without it)."""
    bases = bases or {}
    return {stream: decode(blob, bases.get(stream))
            for stream, blob in split_per_stream(data).items()}


def _joined(blobs: Mapping[str, bytes]) -> bytes:
    out = bytearray()
    _put_varint(out, len(blobs))
    for stream in sorted(blobs):
        name = stream.encode()
        _put_varint(out, len(name))
        out += name
        _put_varint(out, len(blobs[stream]))
        out += blobs[stream]
    return bytes(out)


class PerStreamEncoder:
    """Algorithm 2 per input stream for one group's outputs, in the order they are written:
    each stream's ids as a full set or a delta against the last full set of that stream, and,
    for a delta, the id of the output that carried that full set.

    >>> writer = PerStreamEncoder()
    >>> first, _ = writer.encode({"s": (1, 2, 3, 4)}, "w1")
    >>> second, bases = writer.encode({"s": (2, 3, 4, 6)}, "w2")
    >>> bases, decode_per_stream(second, {"s": decode_per_stream(first)["s"]})
    ({'s': 'w1'}, {'s': (2, 3, 4, 6)})
    """

    def __init__(self) -> None:
        self.writers: dict[str, ProvenanceEncoder] = {}
        self.carriers: dict[str, Any] = {}  # stream → the output holding its last full set

    def encode(self, prov: Mapping[str, Iterable[int]],
               output: Any) -> tuple[bytes, dict[str, Any]]:
        """``prov`` (stream → ids) of output ``output`` as bytes, and the base output of each
        stream written as a delta."""
        blobs: dict[str, bytes] = {}
        bases: dict[str, Any] = {}
        for stream in sorted(prov):
            writer = self.writers.setdefault(stream, ProvenanceEncoder())
            blob = writer.encode(sorted(prov[stream]))
            if read_header(blob).delta:
                bases[stream] = self.carriers[stream]
            else:
                self.carriers[stream] = output
            blobs[stream] = blob
        return _joined(blobs), bases

    def to_state(self) -> dict[str, Any]:
        return {stream: [writer.to_state(), self.carriers.get(stream)]
                for stream, writer in self.writers.items()}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> PerStreamEncoder:
        found = cls()
        for stream, (writer, carrier) in state.items():
            found.writers[stream] = ProvenanceEncoder.from_state(writer)
            found.carriers[stream] = carrier
        return found


# ---------------------------------------------------------------- adaptive writer (Algorithm 2)


@dataclass(frozen=True)
class Thresholds:
    """The thresholds of Algorithm 2 (the seed's Fig. 14; it gives no values).

    - ``alpha``: interval-encode a full set if ``bytes(interval) / bytes(single) < alpha``;
    - ``beta``: send a delta only if ``k / |P| >= beta``, the share of the set it does not store;
    - ``gamma``: at most ``gamma`` deltas in a row after a full set. Line 6 of the algorithm
      tests ``numDelta > gamma``, which would allow ``gamma + 1``; the figure's "maximum number
      of deltas in sequence" is kept instead;
    - ``delta``: sets of fewer ids than this are sent full. The seed counts provenance tuples,
      ``ceil(BYTESIZE(P) / tupleSize)`` (errata); here a tuple holds one id, so it counts ids;
    - ``epsilon``: deflate an encoding longer than this many bytes, keeping it only if smaller.

    Defaults measured with :func:`compare_encodings` (its docstring has the table): intervals
    whenever smaller, deltas while they keep half the set, 8 in a row, sets of 4 ids or more;
    deflate above 64 bytes, which only the full sets of interleaved ids reach.
    """

    alpha: float = 1.0
    beta: float = 0.5
    gamma: int = 8
    delta: int = 4
    epsilon: int = 64

    def __post_init__(self) -> None:
        if self.alpha < 0 or not 0 <= self.beta <= 1 or self.gamma < 0 or self.delta < 1 \
                or self.epsilon < 0:
            raise ConfigError(f"invalid compression thresholds: {self}")


DEFAULT_THRESHOLDS = Thresholds()


class ProvenanceEncoder:
    """The adaptive writer of one stream's TID sets: Algorithm 2 (``CompressProv``), corrected.

    State: the last full set sent and the deltas sent since.

    >>> writer = ProvenanceEncoder()
    >>> [read_header(writer.encode(p)).delta for p in [(1, 2, 3, 4), (2, 3, 4, 6), (9, 10)]]
    [False, True, False]
    """

    def __init__(self, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> None:
        self.thresholds = thresholds
        self.last_full: TidSet = ()
        self.deltas_since = 0
        self._full_interval = False

    def encode(self, ids: Sequence[int]) -> bytes:
        """The bytes of the next TID set, full or a delta.

        >>> writer = ProvenanceEncoder()
        >>> writer.encode((1, 2, 3, 4)).hex(), writer.encode((2, 3, 4, 6)).hex()
        ('01010103', '0301030400')
        """
        ids = _checked(ids)
        t = self.thresholds
        k = delta_of(self.last_full, ids)[0] if self.last_full else 0
        # lines 6-7, as written (the prose inverts them): full unless a delta is worth it
        if (not self.last_full or self.deltas_since >= t.gamma or len(ids) < t.delta
                or k < t.beta * len(ids)):
            data = self._full(ids)
        else:
            self.deltas_since += 1
            data = encode(ids, interval=self._full_interval, last_full=self.last_full)
        if len(data) > t.epsilon:
            data = min(data, _compressed(data), key=len)
        return data

    def to_state(self) -> dict[str, Any]:
        """The writer's state as JSON-ready values (a stream's state store keeps it between
        micro-batches; the thresholds are the caller's configuration, not state).

        >>> writer = ProvenanceEncoder()
        >>> _ = writer.encode((1, 2, 3, 4))
        >>> again = ProvenanceEncoder.from_state(writer.to_state())
        >>> again.encode((2, 3, 4, 6)) == writer.encode((2, 3, 4, 6))
        True
        """
        return {"full": list(self.last_full), "deltas": self.deltas_since,
                "interval": self._full_interval}

    @classmethod
    def from_state(cls, state: dict[str, Any],
                   thresholds: Thresholds = DEFAULT_THRESHOLDS) -> ProvenanceEncoder:
        writer = cls(thresholds)
        writer.last_full = tuple(int(i) for i in state["full"])
        writer.deltas_since = int(state["deltas"])
        writer._full_interval = bool(state["interval"])
        return writer

    def _full(self, ids: TidSet) -> bytes:
        single, runs = encode(ids), encode(ids, interval=True)
        self._full_interval = len(runs) / len(single) < self.thresholds.alpha
        self.last_full, self.deltas_since = ids, 0
        return runs if self._full_interval else single


def _compressed(data: bytes) -> bytes:
    """``data`` with its body deflated (``data`` is an uncompressed encoding)."""
    header, pos = _parse_header(data)
    flags = data[0]
    return _pack(flags, header.count, header.overlap, data[pos:], compress=True)


class ProvenanceDecoder:
    """Reads a stream's encoded TID sets in order and returns each full set.

    >>> writer, reader = ProvenanceEncoder(), ProvenanceDecoder()
    >>> [reader.decode(writer.encode(p)) for p in [(1, 2, 3, 4), (3, 4, 6, 7)]]
    [(1, 2, 3, 4), (3, 4, 6, 7)]
    """

    def __init__(self) -> None:
        self.last_full: TidSet | None = None

    def decode(self, data: bytes) -> TidSet:
        """The TID set of the next encoded set of the stream.

        >>> reader = ProvenanceDecoder()
        >>> reader.decode(encode((1, 2, 3, 4))), reader.decode(encode((4, 5), last_full=(1, 4)))
        ((1, 2, 3, 4), (4, 5))
        """
        header, ids = _decode(data, self.last_full)
        if not header.delta:
            self.last_full = ids
        return ids


def encode_stream(sets: Iterable[Sequence[int]],
                  thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[bytes]:
    """Every set of a stream, through one fresh :class:`ProvenanceEncoder`.

    >>> len(encode_stream([(1, 2), (2, 3)]))
    2
    """
    writer = ProvenanceEncoder(thresholds)
    return [writer.encode(ids) for ids in sets]


def decode_stream(encoded: Iterable[bytes]) -> list[TidSet]:
    """Every set of an encoded stream, in order.

    >>> decode_stream(encode_stream([(1, 2), (2, 3)]))
    [(1, 2), (2, 3)]
    """
    reader = ProvenanceDecoder()
    return [reader.decode(data) for data in encoded]


# ---------------------------------------------------------------- orphan repair (§7.1.2)


def reencode_kept(encoded: Sequence[bytes], keep: Sequence[bool]) -> list[bytes]:
    """The encoded sets of the kept items, as a stream that decodes on its own.

    A selection that drops a full set orphans the deltas based on it: the first kept orphan is
    re-encoded as a full set and the next ones as deltas against it. Every other kept item
    passes through unchanged. Re-encoded items keep their interval and zlib flags.

    >>> stream = encode_stream([(1, 2, 3, 4), (2, 3, 4, 6), (3, 4, 6, 7)])
    >>> kept = reencode_kept(stream, [False, True, True])
    >>> decode_stream(kept), read_header(kept[1]).overlap
    ([(2, 3, 4, 6), (3, 4, 6, 7)], 3)
    """
    if len(keep) != len(encoded):
        raise ProvenanceError(f"{len(keep)} keep flags for {len(encoded)} encoded sets")
    out: list[bytes] = []
    base_index = -1  # the full set the current original deltas are based on
    original_full: TidSet | None = None
    new_full: TidSet = ()  # the full set an orphan of base_index was re-encoded to
    rebased = -1  # the base_index whose orphans are re-based on new_full
    for i, data in enumerate(encoded):
        header, ids = _decode(data, original_full)
        if not header.delta:
            base_index, original_full = i, ids
        if not keep[i]:
            continue
        if not header.delta or keep[base_index]:
            out.append(data)
        elif rebased == base_index:
            out.append(encode(ids, interval=header.interval, last_full=new_full,
                              compress=header.compressed))
        else:
            out.append(encode(ids, interval=header.interval, compress=header.compressed))
            new_full, rebased = ids, base_index
    return out


# ---------------------------------------------------------------- measurements


def sensor_windows(window: int, slide: int, sensors: int, windows: int, *,
                   seed: int = 0, first_id: int = 10**9) -> list[TidSet]:
    """Count windows over one sensor's readings, the readings of ``sensors`` sensors (this one
    included) interleaved at random in one id sequence from ``first_id``.

    >>> sensor_windows(3, 1, 1, 2, first_id=1)
    [(1, 2, 3), (2, 3, 4)]
    """
    rng = random.Random(seed)
    needed = window + slide * (windows - 1)
    mine: list[int] = []
    tid = first_id
    while len(mine) < needed:
        if sensors == 1 or rng.randrange(sensors) == 0:
            mine.append(tid)
        tid += 1
    return [tuple(mine[i * slide:i * slide + window]) for i in range(windows)]


def _mean_size(encoded: Iterable[bytes]) -> float:
    sizes = [len(data) for data in encoded]
    return round(sum(sizes) / len(sizes), 1)


def compare_encodings(window: int = 60, slides: Sequence[int] = (1, 10, 60),
                      sensors: Sequence[int] = (1, 3, 11), windows: int = 240, *,
                      seed: int = 0) -> dict[tuple[int, int], dict[str, float]]:
    """Mean bytes per encoded set, for each ``(sensors, slide)``, of windows of ``window`` ids
    (:func:`sensor_windows`, ids from 10**9): single, interval, delta (every set a delta when
    the overlap allows, single ids), dictionary (single, deflated) and adaptive (defaults).

    Measured with the defaults (ids from 10**9, 60-id windows, 240 of them, seed 0)::

        sensors slide  single interval  delta   dict adaptive
              1     1    66.0      8.0   19.7   13.0      5.3
              1    10    66.0      8.0   33.8   13.0      5.8
              1    60    66.0      8.0   66.0   13.0      8.0
              3     1    66.0     82.0   19.7   52.4     12.5
              3    10    66.0     86.4   33.8   53.2     30.6
              3    60    66.0     87.0   66.0   53.1     53.1
             11     1    66.0    113.2   19.7   67.5     14.1
             11    10    66.0    113.7   33.8   68.0     33.7
             11    60    66.0    114.6   66.0   68.1     65.9

    Over a grid (beta 0.1-0.75, gamma 2-32, epsilon 0-128 and off) the mean of the adaptive
    column is lowest at beta 0.5, gamma 8-12 and epsilon 0-64 (25.4 bytes; 27.4 without deflate,
    when interleaved ids make single ids the full encoding). Deltas shrink even 2-id windows
    (8.0 to 6.0 bytes, contiguous), so ``delta`` only keeps the tiniest sets independent.

    >>> compare_encodings(windows=4, slides=(1,), sensors=(1,))[(1, 1)]["interval"]
    8.0
    """
    # deltas while the overlap lasts, never a refresh by count, single ids, no deflate
    deltas = Thresholds(alpha=0.0, beta=DEFAULT_THRESHOLDS.beta, gamma=2**31, delta=1,
                        epsilon=2**31)
    result: dict[tuple[int, int], dict[str, float]] = {}
    for n in sensors:
        for slide in slides:
            sets = sensor_windows(window, slide, n, windows, seed=seed)
            result[(n, slide)] = {
                "single": _mean_size(encode(p) for p in sets),
                "interval": _mean_size(encode(p, interval=True) for p in sets),
                "delta": _mean_size(encode_stream(sets, deltas)),
                "dictionary": _mean_size(encode(p, compress=True) for p in sets),
                "adaptive": _mean_size(encode_stream(sets)),
            }
    return result
