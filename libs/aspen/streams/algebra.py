"""Ariadne's stream algebra with provenance, evaluated from scratch over finite input lists.

This is the reference semantics (Glavic et al. 2012, §4): the incremental operators that run in
Spark are checked against it, and it is checked against Def. 2 (:mod:`aspen.streams.oracle`).
A *network* is a tree (or DAG) of small frozen operators over named input streams of
:class:`Reading`; :func:`evaluate` runs it and every output :class:`Row` carries

- ``id``: a deterministic output id (the paper's ``new``), the same under any replay;
- ``prov``: the ids of the input readings behind it, per input stream (Reduced-Eager, PP union
  semantics; at an operator that reads the streams themselves this is the PG rule);
- ``cov``: its covering interval ``(min, max)`` per input stream, propagated on its own as the
  CG/CP modes do (min of the lows, max of the highs), so it can be checked against ``prov``.

Conventions (the seed leaves them open):

- Readings ``(id, sensor, ts, value)``: ids positive, unique and ascending in each stream; ``ts``
  is an event time (int or float seconds). A key's readings are taken in id order.
- **Time windows** are **epoch-aligned and half-open**, ``[start, start + size)`` with ``start`` a
  multiple of ``slide`` (tumbling: ``slide = size``), like Spark's ``window()``: a reading exactly
  at a window's end belongs to the next window. Every non-empty window is emitted (the finite
  input is finished; the incremental operator emits the ones its watermark closes, which agree).
- **Count windows** ``𝒞(c, s)`` per key: windows of ``c`` consecutive rows of a key, starting at
  its rows 1, 1 + s, 1 + 2s, …; only full windows are emitted (§11 item 2).
- Output order: selection and projection keep their input's order; a union merges by
  ``(ts, side, position)`` (the arrival order ``Order`` of the paper made deterministic); an
  aggregation emits a window as soon as its last row has arrived (ties: the earlier window
  first); a join emits, for each left row in order, its right partners in order.
- Output ids: a reading ``(stream, id)``; selection and projection ``(name, input id)``; union
  ``(name, side, input id)``; time window ``(name, key, start)``; count window
  ``(name, key, id of its first row)``; join ``(name, left id, right id)``. Operator names must
  be unique in a network, so ids are too.
- Output attributes: a time window has its key, ``start``, ``end``, ``ts = start`` and one
  ``<fn>_<attr>`` per aggregate; a count window its key, ``ts`` = its earliest ``ts`` (as the
  running example's ``min(ti)``) and the aggregates; sum is the exact sum of the values rounded
  once (``math.fsum``; an int for ints), avg the exact sum over the count rounded once
  (:mod:`aspen.streams.exactsum`), so no result depends on the order of the rows. A join
  output has the left row's attributes and the right row's prefixed with ``r_``.

>>> s = [Reading(i, "a", i, 5) for i in (1, 2, 3, 4)]
>>> q = Aggregate(Stream("s"), CountWindow(2, 1), (("sum", "value"),), key=None)
>>> [(row["sum_value"], sorted(row.prov["s"])) for row in evaluate(q, {"s": s})]
[(10, [1, 2]), (10, [2, 3]), (10, [3, 4])]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from aspen.errors import ConfigError, EngineError
from aspen.streams.exactsum import exact_mean, exact_sum

__all__ = [
    "Aggregate",
    "CountWindow",
    "Covering",
    "Inputs",
    "Join",
    "Network",
    "Project",
    "Provenance",
    "Reading",
    "Row",
    "Select",
    "Stream",
    "TimeWindow",
    "Trace",
    "Union",
    "Window",
    "evaluate",
    "replay",
    "trace",
]

#: Input ids per input stream (streams that contribute nothing are left out).
Provenance: TypeAlias = dict[str, frozenset[int]]
#: A covering interval ``(min id, max id)`` per input stream.
Covering: TypeAlias = dict[str, tuple[int, int]]

AGGREGATES = ("avg", "count", "max", "min", "sum")


@dataclass(frozen=True)
class Reading:
    """One sensor reading: ``id`` (positive, ascending in its stream), sensor, event time, value."""

    id: int
    sensor: str
    ts: float
    value: float


@dataclass(frozen=True)
class Row:
    """A tuple of a stream: deterministic ``id``, attributes ``data``, ``prov`` and ``cov``.

    >>> Row(("s", 1), {"value": 5}, {"s": frozenset({1})}, {"s": (1, 1)})["value"]
    5
    """

    id: Hashable
    data: Mapping[str, Any]
    prov: Mapping[str, frozenset[int]]
    cov: Mapping[str, tuple[int, int]]

    def __getitem__(self, attr: str) -> Any:
        return self.data[attr]


# --- operators -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Stream:
    """A named input stream (a p-hook): its readings as rows."""

    name: str


@dataclass(frozen=True)
class Select:
    """σ: the rows of ``child`` for which ``predicate(row)`` holds."""

    child: Network
    predicate: Callable[[Row], bool]
    name: str = "σ"


@dataclass(frozen=True)
class Project:
    """π (and map): each row becomes ``{out: row[attr] or f(row)}`` over ``columns``."""

    child: Network
    columns: Mapping[str, str | Callable[[Row], Any]]
    name: str = "π"


@dataclass(frozen=True)
class Union:
    """∪: the rows of both inputs, merged by ``(ts, side, position)``."""

    left: Network
    right: Network
    name: str = "∪"


@dataclass(frozen=True)
class TimeWindow:
    """Epoch-aligned half-open windows ``[start, start + size)``, a start every ``slide``.

    >>> TimeWindow(10, 5).starts(10)  # a time at a window's end is in the next windows
    [5, 10]
    """

    size: float
    slide: float | None = None  # None: tumbling

    def __post_init__(self) -> None:
        if self.size <= 0 or (self.slide is not None and not 0 < self.slide <= self.size):
            raise ConfigError(f"a time window needs 0 < slide ≤ size, not {self}")

    @property
    def step(self) -> float:
        return self.size if self.slide is None else self.slide

    def starts(self, ts: float) -> list[float]:
        """The starts of the windows holding time ``ts``, earliest first."""
        start = math.floor(ts / self.step) * self.step
        found = []
        while start + self.size > ts:
            found.append(start)
            start -= self.step
        return found[::-1]


@dataclass(frozen=True)
class CountWindow:
    """𝒞(count, slide): ``count`` consecutive rows of a key, a new window every ``slide`` rows.

    >>> CountWindow(3, 2).windows("abcdefg")
    [['a', 'b', 'c'], ['c', 'd', 'e'], ['e', 'f', 'g']]
    """

    count: int
    slide: int

    def __post_init__(self) -> None:
        if self.count < 1 or self.slide < 1:
            raise ConfigError(f"a count window needs count ≥ 1 and slide ≥ 1, not {self}")

    def windows(self, rows: Sequence[Any]) -> list[list[Any]]:
        """The full windows over ``rows`` (a partial one at the end is not a window)."""
        return [list(rows[i:i + self.count])
                for i in range(0, len(rows) - self.count + 1, self.slide)]


@dataclass(frozen=True)
class Aggregate:
    """α_{aggs, window}: one row per window of each ``key`` group (``key=None``: one group).

    ``aggs`` are ``(fn, attr)`` pairs, fn one of avg, count, max, min, sum, each giving the
    attribute ``<fn>_<attr>``, or ``(fn, attr, out)`` triples naming it ``out``.
    """

    child: Network
    window: TimeWindow | CountWindow
    aggs: tuple[tuple[str, str] | tuple[str, str, str], ...] = (("avg", "value"),)
    key: str | None = "sensor"
    name: str = "α"

    def __post_init__(self) -> None:
        unknown = [agg[0] for agg in self.aggs if agg[0] not in AGGREGATES]
        if unknown or not self.aggs:
            raise ConfigError(f"aggregates must be some of {', '.join(AGGREGATES)}: {unknown}")


@dataclass(frozen=True)
class Join:
    """⋈: left row l meets right row r when ``l.ts ≤ r.ts ≤ l.ts + range`` and keys are equal."""

    left: Network
    right: Network
    range: float
    key: str | None = "sensor"
    name: str = "⋈"


Network: TypeAlias = Stream | Select | Project | Union | Aggregate | Join
Inputs: TypeAlias = Mapping[str, Sequence[Reading]]
Window: TypeAlias = tuple[Row, ...]


@dataclass(frozen=True)
class Trace:
    """A run: the output rows, and the windows each aggregation formed (its name → windows)."""

    outputs: list[Row]
    windows: dict[str, list[Window]] = field(default_factory=dict)


# --- evaluation ------------------------------------------------------------------------------

def evaluate(network: Network, inputs: Inputs) -> list[Row]:
    """The output rows of ``network`` run from scratch on ``inputs`` (stream name → readings).

    >>> s = [Reading(1, "a", 0, 9), Reading(2, "a", 1, 3)]
    >>> [(row.id, dict(row.prov)) for row in evaluate(
    ...     Select(Stream("s"), lambda r: r["value"] > 5), {"s": s})]
    [(('σ', ('s', 1)), {'s': frozenset({1})})]
    """
    return trace(network, inputs).outputs


def trace(network: Network, inputs: Inputs) -> Trace:
    """:func:`evaluate`, also returning the windows every aggregation formed (for Def. 2's
    condition 3).

    >>> s = [Reading(i, "a", i, 1) for i in (1, 2, 3)]
    >>> run = trace(Aggregate(Stream("s"), CountWindow(2, 1), name="w"), {"s": s})
    >>> [[row.id for row in w] for w in run.windows["w"]]
    [[('s', 1), ('s', 2)], [('s', 2), ('s', 3)]]
    """
    run = _Run(network, inputs)
    return Trace(run.rows(network), run.windows)


class _Run:
    """One evaluation: rows per operator (each evaluated once), the windows formed, and, in a
    replay, the rows that may differ from the full run (``incomplete``)."""

    def __init__(self, network: Network, inputs: Inputs,
                 outside: Inputs | None = None) -> None:
        _operators(network)  # names must be unique: rows are memoized and ids built by name
        self.inputs = inputs
        self.outside = outside  # replay only: the stored readings outside the slice
        self.first = {s: rows[0].id for s, rows in inputs.items() if rows}  # the slice's starts
        self.memo: dict[str, list[Row]] = {}
        self.windows: dict[str, list[Window]] = {}
        self.incomplete: set[Hashable] = set()

    def rows(self, op: Network) -> list[Row]:
        if op.name not in self.memo:
            self.memo[op.name] = _EVALUATORS[type(op)](self, op)
        return self.memo[op.name]

    def derive(self, row_id: Hashable, data: Mapping[str, Any], parents: Sequence[Row]) -> Row:
        """A new row from ``parents``: provenance is their union, cover their hull."""
        if any(parent.id in self.incomplete for parent in parents):
            self.incomplete.add(row_id)
        return Row(row_id, data, _union(p.prov for p in parents), _hull(p.cov for p in parents))


def _operators(network: Network) -> dict[str, Network]:
    """Every operator of ``network`` by name; two different operators may not share one."""
    found: dict[str, Network] = {}
    todo = [network]
    while todo:
        op = todo.pop()
        if op.name in found:
            if found[op.name] != op:
                raise EngineError(f"two operators of the network are named {op.name!r}; "
                                  "give each a name of its own")
            continue
        found[op.name] = op
        todo.extend(_children(op))
    return found


def _children(op: Network) -> tuple[Network, ...]:
    if isinstance(op, Union | Join):
        return (op.left, op.right)
    return () if isinstance(op, Stream) else (op.child,)


def _union(sets: Iterable[Mapping[str, frozenset[int]]]) -> Provenance:
    merged: dict[str, set[int]] = {}
    for prov in sets:
        for stream, ids in prov.items():
            merged.setdefault(stream, set()).update(ids)
    return {stream: frozenset(ids) for stream, ids in sorted(merged.items())}


def _hull(intervals: Iterable[Mapping[str, tuple[int, int]]]) -> Covering:
    merged: dict[str, tuple[int, int]] = {}
    for cov in intervals:
        for stream, (lo, hi) in cov.items():
            old_lo, old_hi = merged.get(stream, (lo, hi))
            merged[stream] = (min(lo, old_lo), max(hi, old_hi))
    return dict(sorted(merged.items()))


def _ts(row: Row) -> float:
    if "ts" not in row.data:
        raise EngineError(f"row {row.id} has no 'ts' attribute; windows and unions need one")
    return row.data["ts"]


def _stream(run: _Run, op: Stream) -> list[Row]:
    if op.name not in run.inputs:
        raise EngineError(f"no input stream named {op.name!r} (given: {sorted(run.inputs)})")
    readings = run.inputs[op.name]
    previous = 0
    for reading in readings:  # ascending positive ids: the order Def. 2's prefixes rely on
        if not isinstance(reading.id, int) or reading.id <= previous:
            raise EngineError(f"stream {op.name!r}: reading ids must be positive and ascending, "
                              f"got {reading.id} after {previous}")
        previous = reading.id
    return [Row((op.name, r.id), {"sensor": r.sensor, "ts": r.ts, "value": r.value},
                {op.name: frozenset({r.id})}, {op.name: (r.id, r.id)}) for r in readings]


def _select(run: _Run, op: Select) -> list[Row]:
    return [run.derive((op.name, row.id), row.data, [row])
            for row in run.rows(op.child) if op.predicate(row)]


def _project(run: _Run, op: Project) -> list[Row]:
    def value(row: Row, column: str | Callable[[Row], Any]) -> Any:
        return row[column] if isinstance(column, str) else column(row)

    return [run.derive((op.name, row.id), {out: value(row, col) for out, col in
                                           op.columns.items()}, [row])
            for row in run.rows(op.child)]


def _union_rows(run: _Run, op: Union) -> list[Row]:
    tagged = [(_ts(row), side, position, row)
              for side, child in enumerate((op.left, op.right))
              for position, row in enumerate(run.rows(child))]
    tagged.sort(key=lambda item: item[:3])
    return [run.derive((op.name, side, row.id), row.data, [row])
            for _ts_, side, _position, row in tagged]


def _join(run: _Run, op: Join) -> list[Row]:
    right = run.rows(op.right)
    return [run.derive((op.name, left.id, r.id),
                       {**left.data, **{f"r_{a}": v for a, v in r.data.items()}}, [left, r])
            for left in run.rows(op.left) for r in right
            if (op.key is None or left[op.key] == r[op.key])
            and _ts(left) <= _ts(r) <= _ts(left) + op.range]


def _aggregate(run: _Run, op: Aggregate) -> list[Row]:
    rows = run.rows(op.child)
    position = {row.id: i for i, row in enumerate(rows)}
    groups: dict[Hashable, list[Row]] = {}
    for row in rows:
        groups.setdefault(None if op.key is None else row[op.key], []).append(row)
    formed = [(key, start, members) for key, group in groups.items()
              for start, members in _windows(op.window, group)]
    # a window is emitted when its last row arrives; ties (sliding windows): earlier start first
    formed.sort(key=lambda w: (position[w[2][-1].id], 0 if w[1] is None else w[1]))
    cut = _partial_windows(run, op, groups)
    out = []
    for key, start, members in formed:
        run.windows.setdefault(op.name, []).append(tuple(members))
        row = run.derive(_window_id(op, key, start, members), _window_data(op, key, start, members),
                         members)
        if (key, start) in cut:
            run.incomplete.add(row.id)
        out.append(row)
    return out


def _windows(window: TimeWindow | CountWindow,
             group: list[Row]) -> list[tuple[float | None, list[Row]]]:
    """The windows over one key's rows: ``(start, members)``; start is None for count windows."""
    if isinstance(window, CountWindow):
        return [(None, members) for members in window.windows(group)]
    by_start: dict[float, list[Row]] = {}
    for row in group:
        for start in window.starts(_ts(row)):
            by_start.setdefault(start, []).append(row)
    return sorted(by_start.items(), key=lambda item: item[0])


def _window_id(op: Aggregate, key: Hashable, start: float | None, members: list[Row]) -> Hashable:
    return (op.name, key, members[0].id if start is None else start)


def _window_data(op: Aggregate, key: Hashable, start: float | None,
                 members: list[Row]) -> dict[str, Any]:
    data: dict[str, Any] = {} if op.key is None else {op.key: key}
    if start is None:
        data["ts"] = min(_ts(row) for row in members)
    else:
        data.update(start=start, end=start + op.window.size, ts=start)
    for fn, attr, *out in op.aggs:
        data[out[0] if out else f"{fn}_{attr}"] = _aggregate_value(fn, [r[attr] for r in members])
    return data


def _aggregate_value(fn: str, values: list[Any]) -> Any:
    if fn == "avg":  # the exact sum over the count, rounded once
        return exact_mean(values)
    return {"count": len, "max": max, "min": min, "sum": exact_sum}[fn](values)


def _partial_windows(run: _Run, op: Aggregate,
                     groups: Mapping[Hashable, list[Row]]) -> set[tuple[Hashable, float | None]]:
    """In a replay, the windows ``(key, start)`` the slice may hold only part of (or wrongly).

    A time window is partial when a stored reading outside the slice would fall in it too;
    this is decided for windows over stateless inputs (streams, selections, projections,
    unions), others are judged by their rows. A key's count windows (start None) are kept only
    when its first row holds the first reading of the slice in some stream: there the covering
    interval anchors the grid, as in the seed; elsewhere the grid is unknown."""
    if run.outside is None:
        return set()
    if isinstance(op.window, CountWindow):
        return {(key, None) for key, group in groups.items()
                if not any(run.first.get(s) == min(ids) for s, ids in group[0].prov.items())}
    if not _stateless(op.child):
        return set()
    edge = _Run(op.child, run.outside).rows(op.child)
    return {(None if op.key is None else row[op.key], start)
            for row in edge for start in op.window.starts(_ts(row))}


def _stateless(op: Network) -> bool:
    return not isinstance(op, Aggregate | Join) and all(_stateless(c) for c in _children(op))


_EVALUATORS: dict[type, Callable[[_Run, Any], list[Row]]] = {
    Stream: _stream, Select: _select, Project: _project, Union: _union_rows,
    Aggregate: _aggregate, Join: _join,
}


# --- Replay-Lazy -----------------------------------------------------------------------------

def replay(network: Network, stored_inputs: Inputs,
           covering_intervals: Sequence[Mapping[str, tuple[int, int]]],
           target_output_ids: Sequence[Hashable]) -> dict[Hashable, Provenance]:
    """Replay-Lazy retrieval (§7.2.2): the provenance of each target output, rebuilt from the
    stored readings inside its covering interval (``covering_intervals[i]`` is the one of
    ``target_output_ids[i]``).

    Requests whose intervals overlap in some stream are replayed together, each stream's slice
    the hull of theirs; disjoint groups run separately, so window state is reset between them.
    Of each run only rows with a requested id and complete windows are kept, and every row
    built on an incomplete one is dropped too. Count windows are full by construction, but a
    key's grid is only known where its first row holds a slice's first reading (the covering
    interval starts a window); a time window is incomplete when a stored reading outside the
    slice falls in it (decided for windows over stateless inputs). A target a joint run cannot
    confirm is replayed alone; one that its own slice cannot confirm either (a partial window
    passing a selection between stacked windows) is left out of the answer, never given wrong.

    >>> s = [Reading(i, "a", i, 1) for i in range(1, 8)]
    >>> q = Aggregate(Stream("s"), CountWindow(3, 2), (("sum", "value"),), key=None)
    >>> eager = evaluate(q, {"s": s})
    >>> [sorted(row.prov["s"]) for row in eager]
    [[1, 2, 3], [3, 4, 5], [5, 6, 7]]
    >>> found = replay(q, {"s": s}, [eager[0].cov, eager[2].cov], [eager[0].id, eager[2].id])
    >>> [sorted(found[row.id]["s"]) for row in (eager[0], eager[2])]
    [[1, 2, 3], [5, 6, 7]]
    """
    if len(covering_intervals) != len(target_output_ids):
        raise EngineError(f"{len(target_output_ids)} targets but {len(covering_intervals)} "
                          "covering intervals; give one interval per target")
    requests = list(zip(target_output_ids, covering_intervals, strict=True))
    found: dict[Hashable, Provenance] = {}
    for group in _overlapping_groups(requests):
        found |= _replay_slice(network, stored_inputs, group)
        if len(group) > 1:
            for request in group:
                if request[0] not in found:
                    found |= _replay_slice(network, stored_inputs, [request])
    return found


Request: TypeAlias = tuple[Hashable, Mapping[str, tuple[int, int]]]


def _overlapping_groups(requests: list[Request]) -> list[list[Request]]:
    """The requests grouped by overlap of their intervals in any stream (transitively)."""
    groups: list[tuple[list[Request], Covering]] = []
    for request in requests:
        joined, hull = [request], dict(request[1])
        while True:  # absorb every group the growing hull overlaps
            hit = next((i for i, (_m, cover) in enumerate(groups) if _overlap(cover, hull)), None)
            if hit is None:
                break
            members, cover = groups.pop(hit)
            joined, hull = members + joined, _hull([cover, hull])
        groups.append((joined, hull))
    return [members for members, _cover in groups]


def _overlap(a: Mapping[str, tuple[int, int]], b: Mapping[str, tuple[int, int]]) -> bool:
    return any(a[s][0] <= b[s][1] and b[s][0] <= a[s][1] for s in a.keys() & b.keys())


def _replay_slice(network: Network, stored: Inputs,
                  group: list[Request]) -> dict[Hashable, Provenance]:
    """One run on the hull of the group's intervals; the complete rows the group asked for."""
    hull = _hull(cov for _target, cov in group)

    def inside(stream: str, reading: Reading) -> bool:
        return stream in hull and hull[stream][0] <= reading.id <= hull[stream][1]

    sliced = {s: [r for r in rows if inside(s, r)] for s, rows in stored.items()}
    outside = {s: [r for r in rows if not inside(s, r)] for s, rows in stored.items()}
    run = _Run(network, sliced, outside)
    targets = {target for target, _cov in group}
    return {row.id: dict(row.prov) for row in run.rows(network)
            if row.id in targets and row.id not in run.incomplete}
