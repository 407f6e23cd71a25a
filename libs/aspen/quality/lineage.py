"""What the reading and network suites share: the retained readings the rows of a stream name,
the problems found among those rows, and the cross-checks of what a stream recorded.

A triggering rule's windows (:mod:`aspen.quality.reading_lineage`) and a stream network's
outputs (:mod:`aspen.quality.networks`) both name readings by id; housekeeping deletes old
readings, a prefix of the ids, so a row is checked when its readings are all retained (its
``ids_lo ≥`` the lowest retained id), a dropped reading when its id is.

>>> import pandas as pd
>>> readings = pd.DataFrame({"id": [8, 7, 9], "sensor": ["s1", "s1", "s2"],
...                          "value": [2.0, 1.0, 3.0],
...                          "ts": pd.to_datetime(["2026-01-01T00:00:01Z"] * 3)})
>>> retained = RetainedReadings.of(readings)
>>> retained.lowest, retained.positions((7, 9)).tolist(), retained.positions((6,))
(7, [0, 2], None)
>>> drops = pd.DataFrame({"rule": ["r"], "id": [8], "sensor": ["s1"], "value": [2.0],
...                       "ts": pd.to_datetime(["2026-01-01T00:00:01Z"])})
>>> drops_in_readings(drops, {"readings": readings})
(True, '1 dropped reading(s) within retention, all in readings')
>>> drops_in_readings(drops.assign(id=[6]), {"readings": readings})
(True, '0 dropped reading(s) within retention, all in readings (1 past it)')
>>> drops_in_readings(drops.assign(id=[10]), {"readings": readings})[0]
False
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from aspen.errors import ProvenanceError
from aspen.lake.tables import READINGS
from aspen.quality.spec import CrossCheckResult

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = [
    "EXAMPLES", "UNDECODABLE", "LineageProblems", "RetainedReadings", "definitions_valid",
    "drops_in_readings", "micros", "recorded_in",
]

#: How many examples a failed check names.
EXAMPLES = 3
#: What decoding corrupt provenance bytes may raise.
UNDECODABLE = (ProvenanceError, ValueError, IndexError, zlib.error)

#: A cross-table check: ``(frame, tables)`` → ``(success, observed)`` or None (skipped).
Check = Callable[["pd.DataFrame", Mapping[str, "pd.DataFrame"]], CrossCheckResult]


def micros(values: pd.Series) -> np.ndarray:
    """Timestamps (UTC, any unit, no nulls) as integer microseconds since the epoch.

    >>> import pandas as pd
    >>> micros(pd.Series(pd.to_datetime(["1970-01-01T00:00:01Z"]))).tolist()
    [1000000]
    """
    import pandas as pd

    stamps = pd.to_datetime(values, utc=True)
    epoch = pd.Timestamp(0, tz="UTC")
    return ((stamps - epoch) // pd.Timedelta(1, "us")).to_numpy(dtype="int64")


@dataclass(frozen=True)
class RetainedReadings:
    """The retained readings sorted by id: ids, sensors, times (µs since the epoch), values;
    ``lowest`` is the lowest retained id (None when none is)."""

    lowest: int | None
    ids: np.ndarray
    sensors: np.ndarray
    ts_us: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, readings: pd.DataFrame) -> RetainedReadings:
        """The readings of a ``readings`` frame (rows with a null left out, one per id)."""
        lowest = readings["id"].min() if len(readings) else None
        lowest = None if lowest is None or lowest != lowest else int(lowest)
        rows = readings.dropna(subset=["id", "sensor", "ts", "value"])
        rows = rows.drop_duplicates("id").sort_values("id")
        ids = rows["id"].to_numpy(dtype="int64")
        ts_us = micros(rows["ts"]) if len(rows) else ids.copy()
        return cls(lowest, ids, rows["sensor"].astype(str).to_numpy(), ts_us,
                   rows["value"].to_numpy(dtype="float64"))

    @cached_property
    def by_sensor(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Each sensor's readings sorted by id: (ids, times in µs, values)."""
        import pandas as pd

        groups = pd.Series(self.sensors).groupby(self.sensors).indices
        return {str(sensor): (self.ids[at], self.ts_us[at], self.values[at])
                for sensor, at in groups.items()}

    def positions(self, ids: Sequence[int]) -> np.ndarray | None:
        """Where ``ids`` are in :attr:`ids` (None when one of them is not a retained reading)."""
        import numpy as np

        wanted = np.asarray(ids, dtype="int64")
        found = self.ids.searchsorted(wanted)
        if (found >= len(self.ids)).any() or (self.ids[found] != wanted).any():
            return None
        return found

    def attributes(self, position: int) -> dict[str, Any]:
        """A reading's attributes as a network's stream predicates see them (``ts`` in
        seconds, as :func:`aspen.readings.network_tables.readings_of` computes it)."""
        return {"id": int(self.ids[position]), "sensor": str(self.sensors[position]),
                "ts": int(self.ts_us[position]) * 1000 / 1e9,
                "value": float(self.values[position])}


@dataclass
class LineageProblems:
    """The rows of a stream found wrong, by problem (in the order of :attr:`PROBLEMS`), with
    a few examples each; a subclass names its rows and its problems.

    >>> problems = LineageProblems(checked=2)
    >>> problems.result()
    (True, "2 row(s) within retention, each with its readings' ids in readings")
    >>> problems.add("not in readings", "r1")
    >>> problems.result()
    (False, '1 of 2 row(s) within retention: 1 not in readings, e.g. r1')
    """

    checked: int = 0
    past_retention: int = 0
    not_replayed: int = 0
    found: dict[str, list[str]] = field(default_factory=dict)

    #: The problems a row can have, in the order they are reported.
    PROBLEMS: ClassVar[tuple[str, ...]] = ("not decodable", "not in readings")
    #: What the rows are, in a count.
    ROWS: ClassVar[str] = "row(s)"
    #: What a row that passed has.
    PASSED: ClassVar[str] = "each with its readings' ids in readings"

    def add(self, problem: str, row: str) -> None:
        self.found.setdefault(problem, []).append(row)

    def notes(self) -> str:
        """What the success line adds about the rows not checked."""
        return ""

    def result(self) -> tuple[bool, str]:
        """``(success, observed)`` for the outcome."""
        if not self.found:
            return True, (f"{self.checked} {self.ROWS} within retention, {self.PASSED}"
                          f"{self.notes()}")
        bad = len({row for rows in self.found.values() for row in rows})
        parts = [f"{len(self.found[p])} {p}" for p in self.PROBLEMS if p in self.found]
        examples = [r for p in self.PROBLEMS for r in self.found.get(p, [])[:1]][:EXAMPLES]
        return False, (f"{bad} of {self.checked} {self.ROWS} within retention: "
                       f"{', '.join(parts)}, e.g. {', '.join(examples)}")


def definitions_valid(parse: Callable[[Any], Any], kind: str) -> Check:
    """The check that each ``definition`` of a frame of recorded ``kind``s (``name``,
    ``definition``) is one ``parse`` reads as a valid ``kind`` of the row's name (``parse``
    returns None for one it cannot).

    >>> import pandas as pd
    >>> from types import SimpleNamespace
    >>> check = definitions_valid(lambda text: None if text == "{" else SimpleNamespace(name=text),
    ...                           "rule")
    >>> check(pd.DataFrame({"name": ["a", "b"], "definition": ["a", "{"]}), {})
    (False, "1 definition(s) not a valid rule of their name, e.g. ['b']")
    """

    def check(frame: pd.DataFrame, _: Mapping[str, pd.DataFrame]) -> CrossCheckResult:
        bad = []
        for name, definition in zip(frame["name"], frame["definition"], strict=True):
            parsed = parse(definition)
            if parsed is None or parsed.name != name:
                bad.append(str(name))
        if bad:
            return False, (f"{len(bad)} definition(s) not a valid {kind} of their name, "
                           f"e.g. {bad[:5]}")
        return True, f"{len(frame)} {kind} definition(s), all valid"

    return check


def recorded_in(table: str, kind: str,
                known: Callable[[Mapping[str, pd.DataFrame]], Mapping[str, Any]]) -> Check:
    """The check that every ``kind`` a frame names (its column ``kind``) is one ``known``
    finds recorded in ``table`` (skipped without that table or column).

    >>> import pandas as pd
    >>> check = recorded_in("reading_rules", "rule", lambda tables: {"r": object()})
    >>> check(pd.DataFrame({"rule": ["r", "x"]}), {"reading_rules": pd.DataFrame()})
    (False, "1 rule(s) not recorded in 'reading_rules', e.g. ['x']")
    """

    def check(frame: pd.DataFrame, tables: Mapping[str, pd.DataFrame]) -> CrossCheckResult:
        if table not in tables or kind not in frame:
            return None
        bad = sorted(set(frame[kind].dropna().astype(str)) - set(known(tables)))
        if bad:
            return False, f"{len(bad)} {kind}(s) not recorded in '{table}', e.g. {bad[:5]}"
        return True, f"{frame[kind].nunique()} {kind}(s), all recorded in '{table}'"

    return check


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
