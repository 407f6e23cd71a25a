"""Event-time windows per key, kept incrementally, each closed window with its readings' ids.

This is the stateful operator the readings stream runs inside Spark's state store (one
:class:`KeyWindows` per sensor, serialized between micro-batches): a windowed aggregation
(count, sum, min, max, avg kept as an exact sum and count) whose every output carries the ids
of the readings in its window — Ariadne's provenance of an aggregation, the set of its window.

Conventions (decision 0036):

- Windows are **epoch-aligned and half-open**, ``[start, start + size)`` with ``start`` a multiple
  of ``slide`` (tumbling when ``slide == size``), as Spark's ``window()``: which windows a reading
  falls in depends on its time only, never on where a stream or a replay starts.
- Times are integer microseconds since the epoch, so window arithmetic is exact.
- A key's readings are taken in id order (ids are ordered by ingest). The key's **watermark** is
  the largest time seen so far minus the allowed lateness. A reading older than the watermark is
  *late* and dropped; a reading with the time of one already counted is a *duplicate* and
  dropped; both are reported, never silently gone. A window closes, and is emitted once, when
  the watermark reaches its end. So the outputs depend on the readings and their order only, not
  on how the stream was cut into micro-batches: a rerun or a replay gives the same windows.
- A window's sum is kept exactly (:class:`~aspen.streams.exactsum.ExactSum`): ``total`` is the
  real sum of its values rounded once (``math.fsum``), ``avg`` the real sum over the count
  rounded once, whatever order the readings came in.

>>> spec = WindowSpec(size_us=60_000_000, slide_us=60_000_000, lateness_us=0)
>>> key = KeyWindows()
>>> key.add(spec, Reading(1, 10_000_000, 91.0)).closed
[]
>>> step = key.add(spec, Reading(2, 61_000_000, 80.0))
>>> [(w.start_us, w.count, w.avg, w.ids) for w in step.closed]
[(0, 1, 91.0, (1,))]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aspen.errors import ConfigError
from aspen.streams.exactsum import ExactSum

__all__ = [
    "KEEPS", "KeyWindows", "Reading", "Step", "WindowOutput", "WindowSpec", "replay_window",
    "window_starts",
]

#: Microseconds in a second.
SECOND_US = 1_000_000


@dataclass(frozen=True)
class Reading:
    """One reading of a key: its id (ordered, unique), event time (µs) and value."""

    id: int
    ts_us: int
    value: float


@dataclass(frozen=True)
class WindowSpec:
    """Windows of ``size_us`` starting every ``slide_us`` (µs), late after ``lateness_us``.

    >>> WindowSpec(60 * SECOND_US, 30 * SECOND_US, 0).tumbling
    False
    """

    size_us: int
    slide_us: int
    lateness_us: int = 0

    def __post_init__(self) -> None:
        if self.size_us <= 0 or self.slide_us <= 0:
            raise ConfigError("a window's size and slide must be positive")
        if self.slide_us > self.size_us:
            raise ConfigError("a window's slide must not exceed its size (readings in no window)")
        if self.lateness_us < 0:
            raise ConfigError("the allowed lateness must be ≥ 0")

    @property
    def tumbling(self) -> bool:
        return self.slide_us == self.size_us


def window_starts(spec: WindowSpec, ts_us: int) -> list[int]:
    """The starts of the windows holding time ``ts_us``, earliest first.

    >>> window_starts(WindowSpec(60, 60), 60)  # a time at a window's end opens the next
    [60]
    >>> window_starts(WindowSpec(60, 20), 65)
    [20, 40, 60]
    """
    last = (ts_us // spec.slide_us) * spec.slide_us
    first = last
    while first - spec.slide_us > ts_us - spec.size_us:
        first -= spec.slide_us
    return list(range(first, last + 1, spec.slide_us))


#: What a window keeps of its readings: every id (Reduced-Eager), the covering interval only
#: (Replay-Lazy), or nothing (the same query without provenance).
KEEPS = ("ids", "covering", "none")


@dataclass
class _Open:
    """A window still open: its aggregates so far (the sum exact), its readings' covering
    interval and, when kept, their ids."""

    count: int = 0
    sum: ExactSum = field(default_factory=ExactSum)
    low: float = float("inf")
    high: float = float("-inf")
    ids: list[int] = field(default_factory=list)
    first: int = 0
    last: int = 0

    def add(self, reading: Reading, keep: str) -> None:
        self.count += 1
        self.sum.add(reading.value)
        self.low = min(self.low, reading.value)
        self.high = max(self.high, reading.value)
        if keep == "ids":
            self.ids.append(reading.id)
        if keep != "none":  # readings come in id order: the first and last are the interval
            self.first = self.first or reading.id
            self.last = reading.id


@dataclass(frozen=True)
class WindowOutput:
    """A closed window: ``[start_us, end_us)``, its aggregates, its readings' ids (sorted; empty
    unless kept) and their covering interval ``(first, last)`` (0, 0 when not kept).

    ``total`` is the exact sum of the values rounded once; ``mean`` the exact sum over the
    count rounded once (a window built by hand without it averages ``total / count``)."""

    start_us: int
    end_us: int
    count: int
    total: float
    low: float
    high: float
    ids: tuple[int, ...]
    first: int = 0
    last: int = 0
    mean: float | None = None

    @property
    def avg(self) -> float:
        return self.total / self.count if self.mean is None else self.mean

    @property
    def covering(self) -> tuple[int, int]:
        """The covering interval of the window's ids, (lowest, highest)."""
        return self.first, self.last


@dataclass
class Step:
    """What adding readings did: the windows closed (in start order) and the readings dropped,
    each with its reason (``late`` or ``duplicate``)."""

    closed: list[WindowOutput] = field(default_factory=list)
    dropped: list[tuple[Reading, str]] = field(default_factory=list)


@dataclass
class KeyWindows:
    """The open windows of one key and its progress in event time (see the module docstring)."""

    max_ts_us: int | None = None
    open: dict[int, _Open] = field(default_factory=dict)
    #: times of the readings counted in open windows (for duplicates)
    times: set[int] = field(default_factory=set)
    #: what a window keeps of its readings (:data:`KEEPS`)
    keep: str = "ids"

    def watermark(self, spec: WindowSpec) -> int | None:
        """The time below which a reading is late (None before the first reading)."""
        return None if self.max_ts_us is None else self.max_ts_us - spec.lateness_us

    def add(self, spec: WindowSpec, reading: Reading, step: Step | None = None) -> Step:
        """Take one reading (the key's next by id); returns ``step`` (a new one by default)
        with the windows this closed and the reading if dropped."""
        step = Step() if step is None else step
        mark = self.watermark(spec)
        if mark is not None and reading.ts_us < mark:
            step.dropped.append((reading, "late"))
            return step
        if reading.ts_us in self.times:
            step.dropped.append((reading, "duplicate"))
            return step
        self.times.add(reading.ts_us)
        for start in window_starts(spec, reading.ts_us):
            self.open.setdefault(start, _Open()).add(reading, self.keep)
        if self.max_ts_us is None or reading.ts_us > self.max_ts_us:
            self.max_ts_us = reading.ts_us
            self._close(spec, step)
        return step

    def add_all(self, spec: WindowSpec, readings: list[Reading]) -> Step:
        """Take ``readings`` in id order.

        >>> spec = WindowSpec(10, 10, lateness_us=10)
        >>> step = KeyWindows().add_all(spec, [Reading(i, t, 1.0) for i, t in
        ...                                    [(1, 1), (2, 12), (3, 4), (4, 30), (5, 12)]])
        >>> [(w.start_us, w.ids) for w in step.closed], [(r.id, why) for r, why in step.dropped]
        ([(0, (1, 3)), (10, (2,))], [(5, 'late')])
        """
        step = Step()
        for reading in sorted(readings, key=lambda r: r.id):
            self.add(spec, reading, step)
        return step

    def flush(self, spec: WindowSpec) -> list[WindowOutput]:
        """Close every window still open, as if the stream had ended (a replay ends where its
        interval ends).

        >>> key = KeyWindows()
        >>> _ = key.add(WindowSpec(10, 10), Reading(1, 3, 2.0))
        >>> [w.ids for w in key.flush(WindowSpec(10, 10))], key.open
        ([(1,)], {})
        """
        step = Step()
        if self.max_ts_us is not None:
            self.max_ts_us += spec.size_us + spec.lateness_us
            self._close(spec, step)
        return step.closed

    def _close(self, spec: WindowSpec, step: Step) -> None:
        mark = self.watermark(spec)
        assert mark is not None
        for start in sorted(s for s in self.open if s + spec.size_us <= mark):
            window = self.open.pop(start)
            step.closed.append(WindowOutput(start, start + spec.size_us, window.count,
                                            float(window.sum.value), window.low, window.high,
                                            tuple(window.ids), window.first, window.last,
                                            window.sum.mean(window.count)))
        horizon = min(self.open, default=mark)  # times before every open window are done
        self.times = {t for t in self.times if t >= min(horizon, mark)}

    def to_json(self) -> str:
        """The state as JSON text (what the state store keeps between micro-batches). An open
        window is ``[start, count, sum, min, max, ids, first, last, exact sum]``: the sum
        rounded, for reading, then its exact state (:meth:`ExactSum.to_state`).

        >>> key = KeyWindows()
        >>> _ = key.add(WindowSpec(10, 10), Reading(1, 3, 2.5))
        >>> KeyWindows.from_json(key.to_json()) == key
        True
        """
        return json.dumps({
            "max": self.max_ts_us,
            "open": [[start, w.count, float(w.sum.value), w.low, w.high, w.ids, w.first, w.last,
                      w.sum.to_state()] for start, w in sorted(self.open.items())],
            "times": sorted(self.times),
            "keep": self.keep,
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> KeyWindows:
        """The state :meth:`to_json` wrote. State written before sums were kept exactly (an
        open window without its exact sum) is read too: its sum starts from the stored total,
        so a window open across that upgrade keeps the rounding its total already had.

        >>> old = '{"max":3,"open":[[0,1,2.5,2.5,2.5,[1],1,1]],"times":[3],"keep":"ids"}'
        >>> KeyWindows.from_json(old).open[0].sum.value
        2.5
        """
        data = json.loads(text)
        return cls(data["max"],
                   {item[0]: _open_in(item) for item in data["open"]},
                   set(data["times"]), data["keep"])


def _open_in(item: list[Any]) -> _Open:
    _start, count, total, low, high, ids, first, last, *exact = item
    total_sum = ExactSum.from_state(exact[0]) if exact else ExactSum.from_total(float(total))
    return _Open(count, total_sum, low, high, list(ids), first, last)


def replay_window(spec: WindowSpec, readings: list[Reading],
                  start_us: int) -> tuple[int, ...] | None:
    """Replay-Lazy: the ids of the window starting at ``start_us``, rebuilt by running
    ``readings`` (one key's readings of a covering interval, those the stream dropped left out)
    through the windows from an empty state; None when no such window forms.

    >>> replay_window(WindowSpec(10, 10), [Reading(4, 12, 1.0), Reading(7, 15, 1.0)], 10)
    (4, 7)
    """
    replay = KeyWindows()
    step = replay.add_all(spec, readings)
    for window in [*step.closed, *replay.flush(spec)]:
        if window.start_us == start_us:
            return window.ids
    return None
