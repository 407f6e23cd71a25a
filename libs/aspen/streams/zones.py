"""Ariadne's running example as a triggering rule: at least 3 sensors of one zone above 90
within 10 time units.

The network (Glavic et al. 2012, Fig. 1, Example 1): per sensor, the average over a count window
of its last ``count`` readings (slide 1) damps spikes; a sensor whose average is above
``threshold`` is *hot* at that reading's time; when at least ``sensors`` different sensors of
one zone are hot within ``within_s`` seconds, the alarm triggers them. A sensor whose average
falls back to ``threshold`` or below is un-triggered.

Aspen's reading of it (decision 0036): a *zone* is a square cell of ``zone_m`` meters of the
sensor field, from the sensor's position (the ``sensor`` table; a reading of a sensor without a
position has no zone and is dropped as ``unknown_sensor``). A zone's readings are taken in id
order; its watermark is its latest time minus ``lateness_s``, and older readings are dropped as
``late``. The provenance of a trigger is the union of the count windows of the hot sensors of
its alarm (each window: the ids of that sensor's last ``count`` readings), of an un-trigger the
sensor's count window that fell back.

>>> rule = ZoneRule(count=2, sensors=2, within_s=10)
>>> zone = ZoneState()
>>> step = zone.add_all(rule, [ZoneReading(i, s, t * 1_000_000, v) for i, s, t, v in [
...     (1, "a", 0, 95), (2, "a", 1, 95), (3, "b", 2, 99), (4, "b", 3, 99)]])
>>> [(d.sensor, d.op, d.ids) for d in step.decisions]
[('a', 'insert', (1, 2, 3, 4)), ('b', 'insert', (1, 2, 3, 4))]
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from aspen.errors import ConfigError
from aspen.streams.exactsum import exact_mean
from aspen.streams.windows import SECOND_US

__all__ = ["ZoneDecision", "ZoneReading", "ZoneRule", "ZoneState", "ZoneStep", "zone_of"]


@dataclass(frozen=True)
class ZoneRule:
    """At least ``sensors`` sensors of a ``zone_m``-meter zone whose average over their last
    ``count`` readings is above ``threshold`` within ``within_s`` seconds trigger."""

    name: str = "zone_alarm"
    count: int = 10
    threshold: float = 90.0
    sensors: int = 3
    within_s: float = 10.0
    zone_m: float = 50.0
    lateness_s: float = 30.0

    def __post_init__(self) -> None:
        if self.count < 1 or self.sensors < 1:
            raise ConfigError("a zone rule needs a count window of ≥ 1 reading and ≥ 1 sensor")
        if not (math.isfinite(self.threshold) and self.within_s > 0 and self.zone_m > 0
                and self.lateness_s >= 0):
            raise ConfigError("a zone rule's threshold, span, zone size and lateness must be "
                              "finite, positive (lateness ≥ 0)")
        if not self.name.replace("_", "").isalnum():
            raise ConfigError(f"a rule's name is letters, digits and '_': {self.name!r}")

    def describe(self) -> str:
        """The rule in words.

        >>> ZoneRule().describe()
        '≥ 3 sensors of a 50 m zone with avg of their last 10 readings > 90 within 10 s trigger'
        """
        return (f"≥ {self.sensors} sensors of a {self.zone_m:g} m zone with avg of their last "
                f"{self.count} readings > {self.threshold:g} within {self.within_s:g} s trigger")


def zone_of(rule: ZoneRule, x: float, y: float) -> str:
    """The zone of a position.

    >>> zone_of(ZoneRule(), 49.9, 50.0)
    'z0_1'
    """
    return f"z{math.floor(x / rule.zone_m)}_{math.floor(y / rule.zone_m)}"


@dataclass(frozen=True)
class ZoneReading:
    """A reading of a zone: its id, sensor, time (µs) and value."""

    id: int
    sensor: str
    ts_us: int
    value: float


@dataclass(frozen=True)
class ZoneDecision:
    """A sensor triggered (``insert``) or un-triggered (``delete``) at ``ts_us``, with the ids
    of the readings behind it, sorted."""

    sensor: str
    op: str
    ts_us: int
    avg: float
    ids: tuple[int, ...]


@dataclass
class ZoneStep:
    """What readings did to a zone: decisions in order, and readings dropped with a reason."""

    decisions: list[ZoneDecision] = field(default_factory=list)
    dropped: list[tuple[ZoneReading, str]] = field(default_factory=list)


@dataclass
class ZoneState:
    """A zone's per-sensor count windows, its recent hot samples and its triggered sensors."""

    max_ts_us: int | None = None
    #: per sensor, its last ``count`` readings as (id, ts, value)
    recent: dict[str, list[tuple[int, int, float]]] = field(default_factory=dict)
    #: hot samples (ts, sensor, avg, window ids), oldest first, pruned past the span
    hot: list[tuple[int, str, float, list[int]]] = field(default_factory=list)
    triggered: set[str] = field(default_factory=set)

    def add(self, rule: ZoneRule, reading: ZoneReading, step: ZoneStep | None = None) -> ZoneStep:
        """Take the zone's next reading (by id)."""
        step = ZoneStep() if step is None else step
        lateness = round(rule.lateness_s * SECOND_US)
        if self.max_ts_us is not None and reading.ts_us < self.max_ts_us - lateness:
            step.dropped.append((reading, "late"))
            return step
        self.max_ts_us = max(self.max_ts_us or reading.ts_us, reading.ts_us)
        window = self.recent.setdefault(reading.sensor, [])
        window.append((reading.id, reading.ts_us, reading.value))
        del window[:-rule.count]
        if len(window) < rule.count:
            return step
        avg = exact_mean(v for _, _, v in window)  # the exact sum over the count, rounded once
        ids = [i for i, _, _ in window]
        if avg <= rule.threshold:
            if reading.sensor in self.triggered:
                self.triggered.discard(reading.sensor)
                step.decisions.append(
                    ZoneDecision(reading.sensor, "delete", reading.ts_us, avg, tuple(ids)))
            return step
        self.hot.append((reading.ts_us, reading.sensor, avg, ids))
        span = round(rule.within_s * SECOND_US)
        horizon = self.max_ts_us - span - lateness  # samples a later reading can still meet
        self.hot = [h for h in self.hot if h[0] >= horizon]
        self._alarm(rule, reading.ts_us, span, step)
        return step

    def _alarm(self, rule: ZoneRule, now: int, span: int, step: ZoneStep) -> None:
        """Trigger the hot sensors of the span ending at ``now`` if there are enough."""
        latest: dict[str, tuple[int, str, float, list[int]]] = {}
        for sample in self.hot:
            if now - span <= sample[0] <= now:
                latest[sample[1]] = sample  # a sensor's latest hot sample in the span
        if len(latest) < rule.sensors:
            return
        ids = tuple(sorted({i for sample in latest.values() for i in sample[3]}))
        for sensor in sorted(latest):
            if sensor not in self.triggered:
                self.triggered.add(sensor)
                step.decisions.append(ZoneDecision(sensor, "insert", now, latest[sensor][2], ids))

    def add_all(self, rule: ZoneRule, readings: list[ZoneReading]) -> ZoneStep:
        """Take ``readings`` in id order."""
        step = ZoneStep()
        for reading in sorted(readings, key=lambda r: r.id):
            self.add(rule, reading, step)
        return step

    def to_json(self) -> str:
        """The state as JSON text.

        >>> state = ZoneState(5, {"a": [(1, 5, 9.0)]}, [(5, "a", 9.0, [1])], {"a"})
        >>> ZoneState.from_json(state.to_json()) == state
        True
        """
        return json.dumps({"max": self.max_ts_us, "recent": self.recent, "hot": self.hot,
                           "triggered": sorted(self.triggered)}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ZoneState:
        data = json.loads(text)
        return cls(data["max"],
                   {s: [(int(i), int(t), float(v)) for i, t, v in rows]
                    for s, rows in data["recent"].items()},
                   [(int(t), str(s), float(a), [int(i) for i in ids])
                    for t, s, a, ids in data["hot"]],
                   set(data["triggered"]))
