"""Cross-table checks of the readings stream: the readings behind its windows and drops exist.

A ``reading_windows`` row names its readings (:mod:`aspen.pipeline.reading_stream`): a
Reduced-Eager row carries their ids, encoded (a delta is decoded with the full set of the
earlier window of the same rule and sensor that starts at its ``prov_base``); a Replay-Lazy row
only their covering interval ``[ids_lo, ids_hi]``, the ids rebuilt by replaying the sensor's
readings of the interval through the rule's windows with the readings the rule dropped left
out — what :func:`aspen.pipeline.reading_provenance.window_ids` does, here over the frames the
quality gate has already read instead of one query per window. A window rule's ids are readings
of the window's sensor and time; a zone alarm's span its zone's sensors (a Replay-Lazy zone
decision is not replayed here: that reads its zone's history; a request does it).

Housekeeping deletes old readings, a prefix of the ids: a window is checked when its readings
are all retained (``ids_lo ≥`` the lowest retained id), a dropped reading when its id is.

>>> import pandas as pd
>>> readings = pd.DataFrame({"id": [7, 8], "sensor": ["s1", "s1"], "value": [1.0, 2.0],
...                          "ts": pd.to_datetime(["2026-01-01T00:00:01Z"] * 2)})
>>> drops = pd.DataFrame({"rule": ["r"], "id": [8], "sensor": ["s1"], "value": [2.0],
...                       "ts": pd.to_datetime(["2026-01-01T00:00:01Z"])})
>>> drops_in_readings(drops, {"readings": readings})
(True, '1 dropped reading(s) within retention, all in readings')
>>> drops_in_readings(drops.assign(id=[6]), {"readings": readings})
(True, '0 dropped reading(s) within retention, all in readings (1 past it)')
>>> drops_in_readings(drops.assign(id=[9]), {"readings": readings})[0]
False
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aspen.errors import ProvenanceError
from aspen.lake.tables import READINGS
from aspen.pipeline.reading_tables import READING_DROPS, READING_RULES
from aspen.quality.spec import CrossCheckResult
from aspen.streams.rules import TriggerRule
from aspen.streams.zones import ZoneRule

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from aspen.pipeline.reading_tables import Rule

__all__ = [
    "PROBLEMS", "WindowProblems", "drops_in_readings", "parse_rule", "rules_of",
    "windows_in_readings",
]

_EXAMPLES = 3
#: What decoding corrupt provenance bytes may raise.
_UNDECODABLE = (ProvenanceError, ValueError, IndexError, zlib.error)


def _micros(values: pd.Series) -> np.ndarray:
    """Timestamps (UTC, any unit, no nulls) as integer microseconds since the epoch."""
    import pandas as pd

    stamps = pd.to_datetime(values, utc=True)
    epoch = pd.Timestamp(0, tz="UTC")
    return ((stamps - epoch) // pd.Timedelta(1, "us")).to_numpy(dtype="int64")


@dataclass(frozen=True)
class _Retained:
    """The retained readings: sorted by id, and per sensor sorted by id (ids, ts µs, values)."""

    lowest: int | None
    ids: np.ndarray
    sensors: np.ndarray
    ts: np.ndarray
    by_sensor: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]

    @classmethod
    def of(cls, readings: pd.DataFrame) -> _Retained:
        lowest = readings["id"].min() if len(readings) else None
        lowest = None if lowest is None or lowest != lowest else int(lowest)
        rows = readings.dropna(subset=["id", "sensor", "ts", "value"])
        rows = rows.drop_duplicates("id").sort_values("id")
        ids = rows["id"].to_numpy(dtype="int64")
        sensors = rows["sensor"].astype(str).to_numpy()
        ts = _micros(rows["ts"]) if len(rows) else ids.copy()
        values = rows["value"].to_numpy(dtype="float64")
        by_sensor = {
            str(sensor): (ids[positions], ts[positions], values[positions])
            for sensor, positions in rows.reset_index(drop=True).groupby("sensor").indices.items()
        }
        return cls(lowest, ids, sensors, ts, by_sensor)

    def positions(self, ids: Sequence[int]) -> np.ndarray | None:
        """Where ``ids`` are in :attr:`ids` (None when one of them is not a retained reading)."""
        import numpy as np

        wanted = np.asarray(ids, dtype="int64")
        found = self.ids.searchsorted(wanted)
        if (found >= len(self.ids)).any() or (self.ids[found] != wanted).any():
            return None
        return found


def parse_rule(definition: Any) -> Rule | None:
    """The rule a ``reading_rules`` definition holds (None when it holds none).

    >>> parse_rule('{"name": "hot", "threshold": 99}').threshold, parse_rule("{")
    (99, None)
    """
    from aspen.pipeline.reading_tables import rule_from_json

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
class WindowProblems:
    """The windows found wrong, by problem, with a few examples each."""

    checked: int = 0
    past_retention: int = 0
    #: Replay-Lazy zone decisions: replaying one reads its zone's history, left to a request
    not_replayed: int = 0
    found: dict[str, list[str]] = field(default_factory=dict)

    def add(self, problem: str, window: str) -> None:
        self.found.setdefault(problem, []).append(window)

    def result(self) -> tuple[bool, str]:
        """``(success, observed)`` for the outcome.

        >>> problems = WindowProblems(checked=4, past_retention=1)
        >>> problems.result()[0]
        True
        >>> problems.add("not in readings", "r/s1@2026-01-01T00:00:00Z")
        >>> print(problems.result()[1])
        1 of 4 window(s) within retention: 1 not in readings, e.g. r/s1@2026-01-01T00:00:00Z
        """
        past = f" ({self.past_retention} past it)" if self.past_retention else ""
        if self.not_replayed:
            past += f" ({self.not_replayed} lazy zone decision(s) not replayed here)"
        if not self.found:
            return True, (f"{self.checked} window(s) within retention, each with its count of "
                          f"readings' ids in readings{past}")
        bad = len({w for windows in self.found.values() for w in windows})
        parts = [f"{len(self.found[p])} {p}" for p in PROBLEMS if p in self.found]
        examples = [w for p in PROBLEMS for w in self.found.get(p, [])[:1]][:_EXAMPLES]
        return False, (f"{bad} of {self.checked} window(s) within retention: "
                       f"{', '.join(parts)}, e.g. {', '.join(examples)}")


def _full_set(data: bytes) -> bool:
    """Whether ``data`` encodes a full id set (not a delta, not corrupt)."""
    from aspen.streams.encoding import read_header

    try:
        return not read_header(data).delta
    except _UNDECODABLE:
        return False


def _label(row: Mapping[str, Any], start_us: int) -> str:
    import pandas as pd

    start = pd.Timestamp(start_us * 1000, tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{row['rule']}/{row['sensor']}@{start}"


class _Windows:
    """Decodes or replays the ids of the windows of one ``reading_windows`` frame."""

    def __init__(self, frame: pd.DataFrame, retained: _Retained,
                 tables: Mapping[str, pd.DataFrame]) -> None:
        self.retained = retained
        self.rules = rules_of(tables)
        starts = _micros(frame["window_start"])
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
            base_us = _micros(pd.Series([row["prov_base"]]))[0]
            base = self.full.get((str(row["rule"]), str(row["sensor"]), int(base_us)))
            return None if base is None else decode(data, last_full=decode(base))
        except _UNDECODABLE:
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
    retained = _Retained.of(tables[READINGS])
    frame = frame.dropna(subset=["rule", "sensor", "window_start", "window_end", "count",
                                 "ids_lo", "ids_hi"])  # nulls are the suite's to report
    windows = _Windows(frame, retained, tables)
    problems = WindowProblems()
    starts, ends = _micros(frame["window_start"]), _micros(frame["window_end"])
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
                or (retained.ts[found] < start).any() or (retained.ts[found] >= end).any()):
            problems.add("of another sensor or time", label)
    return problems.result()


def drops_in_readings(frame: pd.DataFrame, tables: Mapping[str, pd.DataFrame]) -> CrossCheckResult:
    """Each dropped reading within retention is a reading of ``readings``, with its sensor, time
    and value."""
    if READINGS not in tables:
        return None
    readings = tables[READINGS].dropna(subset=["id"]).drop_duplicates("id").set_index("id")
    lowest = int(readings.index.min()) if len(readings) else None
    rows = frame.dropna(subset=["id"])
    past, bad = 0, []
    for i, sensor, ts, value in zip(rows["id"], rows["sensor"], rows["ts"], rows["value"],
                                    strict=True):
        if lowest is None or int(i) < lowest:
            past += 1
            continue
        if int(i) not in readings.index:
            bad.append(int(i))
            continue
        reading = readings.loc[int(i)]
        if (reading["sensor"], reading["ts"], reading["value"]) != (sensor, ts, value):
            bad.append(int(i))
    checked = len(rows) - past
    if bad:
        return False, (f"{len(bad)} of {checked} dropped reading(s) within retention not in "
                       f"readings as dropped (id, sensor, ts, value), e.g. ids {bad[:5]}")
    note = f" ({past} past it)" if past else ""
    return True, f"{checked} dropped reading(s) within retention, all in readings{note}"
