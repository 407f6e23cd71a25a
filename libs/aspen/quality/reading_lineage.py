"""Cross-table checks of the readings stream: the readings behind its windows exist (and the
rules a lake recorded, parsed).

A ``reading_windows`` row names its readings (:mod:`aspen.readings.rule_stream`): a
Reduced-Eager row carries their ids, encoded (a delta is decoded with the full set of the
earlier window of the same rule and sensor that starts at its ``prov_base``); a Replay-Lazy row
only their covering interval ``[ids_lo, ids_hi]``, the ids rebuilt by replaying the sensor's
readings of the interval through the rule's windows with the readings the rule dropped left
out — what :func:`aspen.readings.rule_provenance.window_ids` does, here over the frames the
quality gate has already read instead of one query per window. A window rule's ids are readings
of the window's sensor and time; a zone alarm's span its zone's sensors (a Replay-Lazy zone
decision is not replayed here: that reads its zone's history; a request does it).

Housekeeping deletes old readings, a prefix of the ids: a window is checked when its readings
are all retained (``ids_lo ≥`` the lowest retained id). The retained readings, the shape of the
problems found and the check of dropped readings are shared with the network suites
(:mod:`aspen.quality.lineage`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from aspen.lake.tables import READINGS
from aspen.quality.lineage import UNDECODABLE, LineageProblems, RetainedReadings, micros
from aspen.quality.spec import CrossCheckResult
from aspen.readings.rule_tables import READING_DROPS, READING_RULES
from aspen.streams.rules import TriggerRule
from aspen.streams.zones import ZoneRule

if TYPE_CHECKING:
    import pandas as pd

    from aspen.readings.rule_tables import Rule

__all__ = [
    "PROBLEMS", "WindowIds", "WindowProblems", "parse_rule", "rules_of", "windows_in_readings",
]


def parse_rule(definition: Any) -> Rule | None:
    """The rule a ``reading_rules`` definition holds (None when it holds none).

    >>> parse_rule('{"name": "hot", "threshold": 99}').threshold, parse_rule("{")
    (99, None)
    """
    from aspen.readings.rule_tables import rule_from_json

    try:
        return rule_from_json(definition)
    except Exception:  # not JSON, not an object, unknown fields, an invalid rule …
        return None


def rules_of(tables: Mapping[str, pd.DataFrame]) -> dict[str, Rule]:
    """The rules recorded in ``reading_rules``, by name (one whose definition does not parse
    is left out).

    >>> import pandas as pd
    >>> rules = pd.DataFrame({"name": ["r", "bad"], "definition": ['{"name": "r"}', "{"]})
    >>> {name: rule.size_s for name, rule in rules_of({"reading_rules": rules}).items()}
    {'r': 60.0}
    """
    if READING_RULES not in tables:
        return {}
    frame = tables[READING_RULES]
    parsed = ((str(name), parse_rule(definition))
              for name, definition in zip(frame["name"], frame["definition"], strict=True))
    return {name: rule for name, rule in parsed if rule is not None}


def _replay(rule: TriggerRule, start_us: int, stream: list[Any]) -> tuple[int, ...] | None:
    """The ids of ``rule``'s window starting at ``start_us`` replayed from ``stream`` (one
    sensor's readings of an interval, drops left out), as ``window_ids`` replays them."""
    from aspen.streams.windows import replay_window

    return replay_window(rule.spec, stream, start_us)


#: The ways a window's readings can be wrong, in the order they are reported.
PROBLEMS: tuple[str, ...] = (
    "not decodable",
    "count differs",
    "not covered by [ids_lo, ids_hi]",
    "not in readings",
    "of another sensor or time",
)


@dataclass
class WindowProblems(LineageProblems):
    """The windows found wrong, by problem, with a few examples each.

    >>> problems = WindowProblems(checked=4, past_retention=1)
    >>> problems.result()[0]
    True
    >>> problems.add("not in readings", "r/s1@2026-01-01T00:00:00Z")
    >>> print(problems.result()[1])
    1 of 4 window(s) within retention: 1 not in readings, e.g. r/s1@2026-01-01T00:00:00Z
    """

    PROBLEMS: ClassVar[tuple[str, ...]] = PROBLEMS
    ROWS: ClassVar[str] = "window(s)"
    PASSED: ClassVar[str] = "each with its count of readings' ids in readings"

    def notes(self) -> str:
        # ``not_replayed``: Replay-Lazy zone decisions; replaying one reads its zone's history
        past = f" ({self.past_retention} past it)" if self.past_retention else ""
        if self.not_replayed:
            past += f" ({self.not_replayed} lazy zone decision(s) not replayed here)"
        return past


def _full_set(data: bytes) -> bool:
    """Whether ``data`` encodes a full id set (not a delta, not corrupt)."""
    from aspen.streams.encoding import read_header

    try:
        return not read_header(data).delta
    except UNDECODABLE:
        return False


def _label(row: Mapping[str, Any], start_us: int) -> str:
    import pandas as pd

    start = pd.Timestamp(start_us * 1000, tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{row['rule']}/{row['sensor']}@{start}"


class WindowIds:
    """Decodes or replays the ids of the windows of one ``reading_windows`` frame."""

    def __init__(self, frame: pd.DataFrame, retained: RetainedReadings,
                 tables: Mapping[str, pd.DataFrame]) -> None:
        self.retained = retained
        self.rules = rules_of(tables)
        starts = micros(frame["window_start"])
        self.full: dict[tuple[str, str, int], bytes] = {}
        for rule, sensor, start, data in zip(frame["rule"], frame["sensor"], starts,
                                             frame["provenance"], strict=True):
            if isinstance(data, bytes) and _full_set(data):
                self.full[(str(rule), str(sensor), int(start))] = data
        self.dropped: dict[tuple[str, str], set[int]] = {}
        if READING_DROPS in tables:
            drops = tables[READING_DROPS].dropna(subset=["rule", "sensor", "id"])
            for rule, sensor, i in zip(drops["rule"], drops["sensor"], drops["id"], strict=True):
                self.dropped.setdefault((str(rule), str(sensor)), set()).add(int(i))

    def ids(self, row: Mapping[str, Any], start_us: int) -> tuple[int, ...] | None:
        """The window's ids (None when they cannot be decoded or replayed)."""
        if row["mode"] == "eager":
            return self._decoded(row)
        if row["mode"] == "lazy":
            return self._replayed(row, start_us)
        return None

    def _decoded(self, row: Mapping[str, Any]) -> tuple[int, ...] | None:
        import pandas as pd

        from aspen.streams.encoding import decode, read_header

        data = row["provenance"]
        if not isinstance(data, bytes):
            return None
        try:
            if not read_header(data).delta:
                return decode(data)
            if pd.isna(row["prov_base"]):
                return None
            base_us = micros(pd.Series([row["prov_base"]]))[0]
            base = self.full.get((str(row["rule"]), str(row["sensor"]), int(base_us)))
            return None if base is None else decode(data, last_full=decode(base))
        except UNDECODABLE:
            return None

    def _replayed(self, row: Mapping[str, Any], start_us: int) -> tuple[int, ...] | None:
        from aspen.streams.windows import Reading

        rule = self.rules.get(str(row["rule"]))
        found = self.retained.by_sensor.get(str(row["sensor"]))
        if not isinstance(rule, TriggerRule) or found is None:  # lazy zone rows: skipped above
            return None
        ids, ts, values = found
        lo, hi = ids.searchsorted(int(row["ids_lo"]), "left"), ids.searchsorted(
            int(row["ids_hi"]), "right")
        dropped = self.dropped.get((str(row["rule"]), str(row["sensor"])), set())
        stream = [Reading(int(i), int(t), float(v))
                  for i, t, v in zip(ids[lo:hi], ts[lo:hi], values[lo:hi], strict=True)
                  if int(i) not in dropped]
        return _replay(rule, start_us, stream)


def windows_in_readings(frame: pd.DataFrame,
                        tables: Mapping[str, pd.DataFrame]) -> CrossCheckResult:
    """Each window within retention has ``count`` ids, decoded or replayed, whose lowest and
    highest are ``ids_lo`` and ``ids_hi``, all of them retained readings; for a window rule
    (not a zone alarm, whose ids span the zone's sensors and their count windows), readings of
    the window's sensor in ``[window_start, window_end)``."""
    if READINGS not in tables:
        return None
    retained = RetainedReadings.of(tables[READINGS])
    frame = frame.dropna(subset=["rule", "sensor", "window_start", "window_end", "count",
                                 "ids_lo", "ids_hi"])  # nulls are the suite's to report
    windows = WindowIds(frame, retained, tables)
    problems = WindowProblems()
    starts, ends = micros(frame["window_start"]), micros(frame["window_end"])
    for row, start, end in zip(frame.to_dict("records"), starts, ends, strict=True):
        if retained.lowest is None or int(row["ids_lo"]) < retained.lowest:
            problems.past_retention += 1
            continue
        if row["mode"] == "lazy" and isinstance(windows.rules.get(str(row["rule"])), ZoneRule):
            problems.not_replayed += 1
            continue
        problems.checked += 1
        label = _label(row, int(start))
        ids = windows.ids(row, int(start))
        if ids is None:
            problems.add("not decodable", label)
            continue
        if len(ids) != int(row["count"]):
            problems.add("count differs", label)
        if not ids or (min(ids), max(ids)) != (int(row["ids_lo"]), int(row["ids_hi"])):
            problems.add("not covered by [ids_lo, ids_hi]", label)
        found = retained.positions(ids)
        if found is None:
            problems.add("not in readings", label)
        elif isinstance(windows.rules.get(str(row["rule"])), TriggerRule) and (
                (retained.sensors[found] != str(row["sensor"])).any()
                or (retained.ts_us[found] < start).any() or (retained.ts_us[found] >= end).any()):
            problems.add("of another sensor or time", label)
    return problems.result()
