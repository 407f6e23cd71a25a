"""Triggering rules: when a sensor's readings make it count as triggered.

A rule turns one sensor's readings into windows (:mod:`aspen.streams.windows`) and its windows
into decisions: a ``triggered`` insertion when a window's aggregate crosses the threshold, a
deletion when a later window falls back. The decisions become ``triggered`` updates of the lake's
update log, so the region views maintain themselves as for any other update, and each decision
keeps the window, and so the readings, behind it.

The default rule (decision 0036): per sensor, the **average value over a tumbling 60-second
event-time window aligned to the epoch**; a window whose average is above 90.0 triggers the
sensor, a later window at or below 90.0 un-triggers it. A window with no readings decides
nothing (a silent sensor keeps its state). Readings above ``outlier_above`` (none by default) are
dropped before the window as outliers, as Ariadne's running example drops readings over 350.
The average is the window's exact sum over its count, rounded once
(:mod:`aspen.streams.exactsum`): a window averaging exactly the threshold does not trigger,
whatever order its readings came in.

>>> rule = TriggerRule()
>>> state = SensorState()
>>> steps = [state.add(rule, Reading(i, t * SECOND_US, v)) for i, t, v in
...          [(1, 5, 95.0), (2, 50, 93.0), (3, 70, 80.0), (4, 130, 85.0), (5, 200, 99.0)]]
>>> [(d.op, d.window.start_us // SECOND_US, d.window.ids) for s in steps for d in s.decisions]
[('insert', 0, (1, 2)), ('delete', 60, (3,))]
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from aspen.errors import ConfigError
from aspen.streams.windows import (
    SECOND_US,
    KeyWindows,
    Reading,
    Step,
    WindowOutput,
    WindowSpec,
)

__all__ = ["AGGREGATES", "Decision", "RuleStep", "SensorState", "TriggerRule", "aggregate_of"]

#: The aggregates a rule may compare with its threshold.
AGGREGATES = ("avg", "min", "max", "count", "sum")


def aggregate_of(window: WindowOutput, aggregate: str) -> float:
    """The value of ``aggregate`` over ``window``.

    >>> aggregate_of(WindowOutput(0, 10, 2, 5.0, 2.0, 3.0, (1, 2)), "avg")
    2.5
    """
    return {"avg": window.avg, "min": window.low, "max": window.high,
            "count": float(window.count), "sum": window.total}[aggregate]


@dataclass(frozen=True)
class TriggerRule:
    """A per-sensor triggering rule: ``aggregate`` over windows of ``size_s`` every ``slide_s``
    seconds above ``threshold`` triggers; at or below it un-triggers."""

    name: str = "avg_above"
    aggregate: str = "avg"
    size_s: float = 60.0
    slide_s: float = 60.0
    threshold: float = 90.0
    lateness_s: float = 30.0
    outlier_above: float | None = None

    def __post_init__(self) -> None:
        if self.aggregate not in AGGREGATES:
            raise ConfigError(f"unknown aggregate '{self.aggregate}'; one of "
                              f"{', '.join(AGGREGATES)}")
        if not math.isfinite(self.threshold):
            raise ConfigError("a rule's threshold must be a finite number")
        if not self.name.replace("_", "").isalnum():
            raise ConfigError(f"a rule's name is letters, digits and '_': {self.name!r}")
        self.spec  # noqa: B018 -- the window's own checks

    @property
    def spec(self) -> WindowSpec:
        return WindowSpec(round(self.size_s * SECOND_US), round(self.slide_s * SECOND_US),
                          round(self.lateness_s * SECOND_US))

    def triggers(self, window: WindowOutput) -> bool:
        """Whether ``window`` puts its sensor in the triggered state."""
        return aggregate_of(window, self.aggregate) > self.threshold

    def describe(self) -> str:
        """The rule in words.

        >>> TriggerRule().describe()
        'avg over tumbling 60 s windows > 90 triggers, ≤ 90 un-triggers (lateness 30 s)'
        """
        kind = "tumbling" if self.size_s == self.slide_s else f"sliding (every {self.slide_s:g} s)"
        text = (f"{self.aggregate} over {kind} {self.size_s:g} s windows > {self.threshold:g} "
                f"triggers, ≤ {self.threshold:g} un-triggers (lateness {self.lateness_s:g} s)")
        if self.outlier_above is not None:
            text += f"; readings > {self.outlier_above:g} dropped as outliers"
        return text


@dataclass(frozen=True)
class Decision:
    """A change of a sensor's triggered state (``insert`` or ``delete``) and its window."""

    op: str
    window: WindowOutput


@dataclass
class RuleStep(Step):
    """A :class:`~aspen.streams.windows.Step` plus the decisions its windows made."""

    decisions: list[Decision] = field(default_factory=list)


@dataclass
class SensorState:
    """One sensor's windows and whether the rule has it triggered."""

    windows: KeyWindows = field(default_factory=KeyWindows)
    triggered: bool = False

    def add(self, rule: TriggerRule, reading: Reading, step: RuleStep | None = None) -> RuleStep:
        """Take the sensor's next reading (by id)."""
        step = RuleStep() if step is None else step
        if rule.outlier_above is not None and reading.value > rule.outlier_above:
            step.dropped.append((reading, "outlier"))
            return step
        first = len(step.closed)
        self.windows.add(rule.spec, reading, step)
        for window in step.closed[first:]:
            above = rule.triggers(window)
            if above != self.triggered:
                self.triggered = above
                step.decisions.append(Decision("insert" if above else "delete", window))
        return step

    def add_all(self, rule: TriggerRule, readings: list[Reading]) -> RuleStep:
        """Take ``readings`` in id order."""
        step = RuleStep()
        for reading in sorted(readings, key=lambda r: r.id):
            self.add(rule, reading, step)
        return step

    def to_json(self) -> str:
        """The state as JSON text.

        >>> state = SensorState(triggered=True)
        >>> SensorState.from_json(state.to_json()) == state
        True
        """
        return json.dumps({"windows": self.windows.to_json(), "triggered": self.triggered})

    @classmethod
    def from_json(cls, text: str) -> SensorState:
        data = json.loads(text)
        return cls(KeyWindows.from_json(data["windows"]), bool(data["triggered"]))
